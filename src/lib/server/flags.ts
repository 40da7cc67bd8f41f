import { parseArgs } from "node:util";
import type { Result } from "~/lib/result.ts";

export type FlagSpec = Record<string, { type: "string" | "boolean"; short?: string }>;

/** Only the flags given; a string flag given without a value (last on the line) reads as "". */
export type Flags<S extends FlagSpec> = { [K in keyof S]?: S[K]["type"] extends "boolean" ? true : string };

/**
 * A command's flags, read with node:util parseArgs: `--name value` or `--name=value`, the last of a repeated flag
 * wins, and a string flag takes the next argument whatever it looks like. An unknown flag, or any other argument,
 * is refused as `unknown option <arg>`. With `hasCommand`, the first argument that is not a flag, or whatever
 * follows `--`, starts a command line of its own, left as it is.
 */
export function parseFlags<S extends FlagSpec>(
  args: string[],
  spec: S,
  options: { hasCommand?: boolean } = {},
): Result<{ flags: Flags<S>; command: string[] }> {
  const { tokens } = parseArgs({ args, options: spec, strict: false, allowPositionals: true, tokens: true });
  const flags: Record<string, string | true> = {};
  for (const token of tokens) {
    if (token.kind !== "option") {
      if (!options.hasCommand) return { ok: false, error: `unknown option ${args[token.index]}` };
      const start = token.kind === "option-terminator" ? token.index + 1 : token.index;
      return { ok: true, flags: flags as Flags<S>, command: args.slice(start) };
    }
    if (!Object.hasOwn(spec, token.name)) return { ok: false, error: `unknown option ${args[token.index]!.split("=", 1)[0]}` };
    flags[token.name] = spec[token.name]!.type === "boolean" ? true : (token.value ?? "");
  }
  return { ok: true, flags: flags as Flags<S>, command: [] };
}
