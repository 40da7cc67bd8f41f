import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { Glob } from "bun";

/**
 * The dependency direction of ARCHITECTURE.md, checked on every import so a violation fails the
 * suite instead of waiting for review.
 */
const root = resolve(import.meta.dir, "../..");

/** `typeOnly`: folders this one may name in `import type` only (it receives those objects, it never makes them). */
type Rule = { folder: string; mayImport: string[]; typeOnly?: string[]; why: string };

const engine = { mayImport: ["src/agent/", "src/lib/"], why: "the capture engine depends on nothing of the server" };

/** Most specific folder first: a file follows the first rule whose folder it is in. */
const rules: Rule[] = [
  { folder: "src/main.ts", mayImport: ["src/", "db/"], why: "the binary's entry starts any command" },
  { folder: "src/commands/", mayImport: ["src/", "db/"], why: "commands compose what they run" },
  {
    folder: "src/server.ts",
    mayImport: ["src/server.ts", "src/api/", "src/ws/", "src/ssr/", "src/lib/"],
    typeOnly: ["src/runtime.ts"],
    why: "createApp composes the transports over a runtime",
  },
  {
    folder: "src/runtime.ts",
    mayImport: ["src/runtime.ts", "src/engines/", "src/services/", "src/store/", "src/lib/", "db/"],
    why: "the composition root makes the engines, never a transport",
  },
  {
    folder: "src/api/",
    mayImport: ["src/api/", "src/services/", "src/lib/"],
    typeOnly: ["src/engines/", "src/runtime.ts"],
    why: "controllers stay thin: no database, no store, engines handed in",
  },
  {
    folder: "src/ws/",
    mayImport: ["src/ws/", "src/api/", "src/services/", "src/lib/"],
    typeOnly: ["src/engines/", "src/runtime.ts"],
    why: "sockets stay thin: no database, no store, engines handed in",
  },
  {
    folder: "src/ssr/",
    mayImport: ["src/ssr/", "src/ui/", "src/services/", "src/lib/"],
    typeOnly: ["src/runtime.ts"],
    why: "loaders call services, never the database",
  },
  { folder: "src/ui/", mayImport: ["src/ui/", "src/lib/"], why: "ui runs in the browser: only ui and lib" },
  {
    folder: "src/services/",
    mayImport: ["src/services/", "src/store/", "src/lib/", "db/"],
    typeOnly: ["src/engines/"],
    why: "verbs are transport-free and are handed the engines they use",
  },
  {
    folder: "src/engines/",
    mayImport: ["src/engines/", "src/services/", "src/store/", "src/lib/", "db/"],
    why: "engines run verbs; they know no transport",
  },
  { folder: "src/store/", mayImport: ["src/store/", "src/lib/"], why: "the store knows only lib" },
  { folder: "src/agent/seccomp/", ...engine },
  { folder: "src/agent/supervisor/", ...engine },
  { folder: "src/agent/relay/", ...engine },
  { folder: "src/agent/parse/", ...engine },
  {
    folder: "src/agent/worker-client.ts",
    mayImport: ["src/agent/", "src/lib/", "src/services/tunnel/execute-request.ts"],
    typeOnly: ["src/store/"],
    why: "the worker runs the query verb on the store it is given",
  },
  { folder: "src/agent/", ...engine, why: "the CLI side knows nothing of the server" },
  { folder: "src/lib/", mayImport: ["src/lib/"], why: "lib is the bottom layer" },
  { folder: "db/", mayImport: ["db/", "src/lib/"], why: "the schema knows only lib" },
];

const importPattern = /(?:^|[\s;])(?:import|export)\s(type\s)?[^"'`]*?from\s*["']([^"']+)["']|import\(\s*["']([^"']+)["']\s*\)/g;

function resolveSpecifier(file: string, spec: string): string | null {
  if (spec.startsWith("~/")) return join("src", spec.slice(2));
  if (spec.startsWith("#db/")) return join("db", spec.slice(4));
  if (spec.startsWith(".")) return relative(root, resolve(dirname(join(root, file)), spec));
  return null; // a package or a builtin
}

const within = (target: string, folders: string[] = []) => folders.some((f) => target === f || target.startsWith(f));

/** Why an import breaks its file's rule, or null when it follows it. */
function check(rule: Rule, target: string, isTypeOnly: boolean): string | null {
  if (within(target, rule.mayImport)) return null;
  if (within(target, rule.typeOnly)) return isTypeOnly ? null : "only `import type` of it";
  return rule.why;
}

function violations(): { found: string[]; checked: number; unruled: string[] } {
  const found: string[] = [];
  const unruled: string[] = [];
  let checked = 0;
  for (const file of new Glob("{src,db}/**/*.{ts,tsx}").scanSync({ cwd: root })) {
    const rule = rules.find((r) => file.startsWith(r.folder));
    if (!rule) {
      unruled.push(file);
      continue;
    }
    checked++;
    const text = readFileSync(join(root, file), "utf8");
    for (const match of text.matchAll(importPattern)) {
      const spec = match[2] ?? match[3];
      if (!spec) continue;
      const target = resolveSpecifier(file, spec);
      if (target === null) continue;
      const why = check(rule, target, Boolean(match[1]));
      if (why) found.push(`${file} imports ${spec} (${why})`);
    }
  }
  return { found, checked, unruled };
}

describe("dependency direction", () => {
  test("every import follows the folder table of ARCHITECTURE.md", () => {
    const { found, checked, unruled } = violations();
    expect(checked).toBeGreaterThan(100);
    expect(unruled).toEqual([]);
    expect(found).toEqual([]);
  });

  test("the checker sees a violation when there is one", () => {
    const rule = rules.find((r) => r.folder === "src/ui/");
    const target = resolveSpecifier("src/ui/x.tsx", "#db/client.ts");
    expect(target).toBe("db/client.ts");
    expect(rule?.mayImport.some((allowed) => target?.startsWith(allowed))).toBe(false);
    const services = rules.find((r) => r.folder === "src/services/")!;
    expect(check(services, "src/engines/live/hub.ts", true)).toBeNull();
    expect(check(services, "src/engines/live/hub.ts", false)).toBe("only `import type` of it");
    expect(check(services, "src/api/index.ts", true)).toBe(services.why);
    expect(resolveSpecifier("src/ui/live/a.tsx", "../../services/x.ts")).toBe("src/services/x.ts");
  });
});
