import { readFileSync } from "node:fs";
import { join } from "node:path";

// Replaced by scripts/build.ts (Bun.build `define`); absent when running from source.
declare const TAPSCOPE_BUILD_VERSION: string | undefined;
declare const TAPSCOPE_BUILD_COMMIT: string | undefined;
declare const TAPSCOPE_BUILD_TARGET: string | undefined;
declare const TAPSCOPE_BUILD_TIME: string | undefined;

export type BuildInfo = {
  version: string;
  /** Short git commit the binary was built from, with "-dirty" for uncommitted changes; "dev" from source. */
  commit: string;
  /** "linux-x64" | "linux-arm64" for a compiled binary; "source" otherwise. */
  target: string;
  builtAt: string | undefined;
};

function sourceVersion(): string {
  try {
    const pkg = JSON.parse(readFileSync(join(import.meta.dir, "../../../package.json"), "utf8")) as { version?: string };
    return pkg.version ?? "0.0.0";
  } catch {
    return "0.0.0";
  }
}

export const buildInfo: BuildInfo =
  typeof TAPSCOPE_BUILD_VERSION === "string"
    ? {
        version: TAPSCOPE_BUILD_VERSION,
        commit: typeof TAPSCOPE_BUILD_COMMIT === "string" ? TAPSCOPE_BUILD_COMMIT : "unknown",
        target: typeof TAPSCOPE_BUILD_TARGET === "string" ? TAPSCOPE_BUILD_TARGET : "unknown",
        builtAt: typeof TAPSCOPE_BUILD_TIME === "string" ? TAPSCOPE_BUILD_TIME : undefined,
      }
    : { version: sourceVersion(), commit: "dev", target: "source", builtAt: undefined };

/** The line `tapscope version` prints, e.g. `tapscope 0.1.0 (commit 1a2b3c4d5e6f, linux-x64, built 2026-11-21T12:00:00Z)`. */
export function versionLine(info: BuildInfo = buildInfo): string {
  const parts = [`commit ${info.commit}`, info.target];
  if (info.builtAt) parts.push(`built ${info.builtAt}`);
  return `tapscope ${info.version} (${parts.join(", ")})`;
}
