import { describe, expect, test } from "bun:test";
import { parseFlags } from "~/lib/server/flags.ts";

const spec = {
  log: { type: "boolean" },
  service: { type: "string" },
  "payload-limit": { type: "string" },
  help: { type: "boolean", short: "h" },
} as const;

describe("parseFlags", () => {
  test("--name value and --name=value; booleans are true when given; absent flags are absent", () => {
    const r = parseFlags(["--service", "api", "--payload-limit=10", "--log"], spec);
    expect(r).toEqual({ ok: true, flags: { service: "api", "payload-limit": "10", log: true }, command: [] });
    expect(parseFlags([], spec)).toEqual({ ok: true, flags: {}, command: [] });
  });

  test("a short alias, the last of a repeated flag, a value that looks like a flag", () => {
    expect(parseFlags(["-h"], spec)).toMatchObject({ ok: true, flags: { help: true } });
    expect(parseFlags(["--service", "a", "--service", "b"], spec)).toMatchObject({ ok: true, flags: { service: "b" } });
    expect(parseFlags(["--service", "--log"], spec)).toMatchObject({ ok: true, flags: { service: "--log" } });
  });

  test("a string flag last on the line, or with '=' and nothing after, reads as empty", () => {
    expect(parseFlags(["--service"], spec)).toMatchObject({ ok: true, flags: { service: "" } });
    expect(parseFlags(["--service="], spec)).toMatchObject({ ok: true, flags: { service: "" } });
  });

  test("unknown flags and stray arguments are refused as they were written", () => {
    expect(parseFlags(["--nope=3"], spec)).toEqual({ ok: false, error: "unknown option --nope" });
    expect(parseFlags(["-x"], spec)).toEqual({ ok: false, error: "unknown option -x" });
    expect(parseFlags(["-hx"], spec)).toEqual({ ok: false, error: "unknown option -hx" });
    expect(parseFlags(["stray"], spec)).toEqual({ ok: false, error: "unknown option stray" });
    expect(parseFlags(["--"], spec)).toEqual({ ok: false, error: "unknown option --" });
    expect(parseFlags(["--constructor"], spec)).toEqual({ ok: false, error: "unknown option --constructor" });
  });

  test("with a command: it starts at the first argument that is not a flag, or after --, and is left as it is", () => {
    expect(parseFlags(["--log", "curl", "-s", "--service", "x"], spec, { hasCommand: true })).toEqual({
      ok: true,
      flags: { log: true },
      command: ["curl", "-s", "--service", "x"],
    });
    expect(parseFlags(["--service", "api", "--", "-weird", "--log"], spec, { hasCommand: true })).toEqual({
      ok: true,
      flags: { service: "api" },
      command: ["-weird", "--log"],
    });
    expect(parseFlags(["--log"], spec, { hasCommand: true })).toEqual({ ok: true, flags: { log: true }, command: [] });
  });
});
