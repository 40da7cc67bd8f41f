import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { Glob } from "bun";

/**
 * The dependency direction of ARCHITECTURE.md, checked on every import so a violation fails the
 * suite instead of waiting for review.
 */
const root = resolve(import.meta.dir, "..");

/**
 * `typeOnly`: folders this one may name in `import type` only (it receives those objects, it never makes them).
 * `mayNotImport`: folders inside `mayImport` that stay out of reach. `packages`: when given, the only npm packages
 * the folder may import (browser code: no builtins, no driver).
 */
type Rule = { folder: string; mayImport: string[]; typeOnly?: string[]; mayNotImport?: string[]; packages?: string[]; why: string };

/** What the browser bundle may be built from besides our own code. */
const browserPackages = ["react", "react-dom", "react-router", "@tanstack/react-virtual", "@sinclair/typebox"];

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
  {
    folder: "src/ui/",
    mayImport: ["src/ui/", "src/lib/"],
    mayNotImport: ["src/lib/server/"],
    packages: browserPackages,
    why: "ui runs in the browser: only ui and browser-safe lib",
  },
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
  { folder: "src/lib/server/", mayImport: ["src/lib/"], why: "lib is the bottom layer" },
  {
    folder: "src/lib/",
    mayImport: ["src/lib/"],
    mayNotImport: ["src/lib/server/"],
    packages: ["@sinclair/typebox"],
    why: "lib outside lib/server runs in the browser too: no lib/server, no builtin, no server package",
  },
  { folder: "db/", mayImport: ["db/", "src/lib/"], why: "the schema knows only lib" },
];

const importPattern =
  /(?:^|[\s;])(?:import|export)\s(type\s)?[^"'`]*?from\s*["']([^"']+)["']|import\(\s*["']([^"']+)["']\s*\)|(?:^|[\s;])import\s*["']([^"']+)["']/g;

function resolveSpecifier(file: string, spec: string): string | null {
  if (spec.startsWith("~/")) return join("src", spec.slice(2));
  if (spec.startsWith("#db/")) return join("db", spec.slice(4));
  if (spec.startsWith(".")) return relative(root, resolve(dirname(join(root, file)), spec));
  return null; // a package or a builtin
}

/** "react-dom/client" -> "react-dom", "@scope/name/sub" -> "@scope/name", "node:fs" -> "node:fs". */
function packageOf(spec: string): string {
  const parts = spec.split("/");
  return spec.startsWith("@") ? parts.slice(0, 2).join("/") : (parts[0] ?? spec);
}

const within = (target: string, folders: string[] = []) => folders.some((f) => target === f || target.startsWith(f));

/** Why an import breaks its file's rule, or null when it follows it. */
function check(rule: Rule, target: string, isTypeOnly: boolean): string | null {
  if (within(target, rule.mayNotImport)) return rule.why;
  if (within(target, rule.mayImport)) return null;
  if (within(target, rule.typeOnly)) return isTypeOnly ? null : "only `import type` of it";
  return rule.why;
}

/** Why importing the package `spec` breaks the rule, or null. */
function checkPackage(rule: Rule, spec: string): string | null {
  if (!rule.packages || rule.packages.includes(packageOf(spec))) return null;
  return rule.why;
}

const ruleOf = (file: string) => rules.find((r) => file.startsWith(r.folder));

/** Code that runs in the browser: ui, and lib outside lib/server. */
const isBrowserCode = (file: string) => file.startsWith("src/ui/") || (file.startsWith("src/lib/") && !file.startsWith("src/lib/server/"));

/** Server runtime globals: the browser has none of them, and a bundler would carry them in silently. */
const serverGlobalPattern = /\b(?:process|Bun|Buffer|__dirname)\b[.(]|\bimport\.meta\.(?:dir|path|file|require)\b|\brequire\(/;

/**
 * The publish codec and the body encoder use Node's Buffer (Bun has it) for speed. The browser never calls them: the
 * bundler drops them, and tests/e2e/client-bundle.e2e.ts checks that no Buffer reaches the bundle.
 */
const mayUseBuffer = ["src/lib/bytes.ts", "src/lib/protocol/event-batch.ts", "src/lib/protocol/event.ts"];

function violations(): { found: string[]; checked: number; unruled: string[] } {
  const found: string[] = [];
  const unruled: string[] = [];
  let checked = 0;
  for (const file of new Glob("{src,db}/**/*.{ts,tsx}").scanSync({ cwd: root })) {
    const rule = ruleOf(file);
    if (!rule) {
      unruled.push(file);
      continue;
    }
    checked++;
    const text = readFileSync(join(root, file), "utf8");
    if (isBrowserCode(file)) {
      const global = withoutStrings(withoutComments(text)).match(serverGlobalPattern);
      if (global && !(global[0] === "Buffer." && mayUseBuffer.includes(file)))
        found.push(`${file} uses ${global[0]} (browser code: no server runtime globals)`);
    }
    for (const match of text.matchAll(importPattern)) {
      const spec = match[2] ?? match[3] ?? match[4];
      if (!spec) continue;
      const target = resolveSpecifier(file, spec);
      const why = target === null ? checkPackage(rule, spec) : check(rule, target, Boolean(match[1]));
      if (why) found.push(`${file} imports ${spec} (${why})`);
    }
  }
  return { found, checked, unruled };
}

/** Comments may name what the code must not use. */
function withoutComments(text: string): string {
  return text.replace(/\/\*[\s\S]*?\*\//g, "").replace(/(^|[^:"'`])\/\/.*$/gm, "$1");
}

/** Quoted string literals (one line each) emptied: a filter field named "process.name" is text, not the global. */
function withoutStrings(text: string): string {
  return text.replace(/"(?:[^"\\\n]|\\.)*"/g, '""').replace(/'(?:[^'\\\n]|\\.)*'/g, "''");
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

  test("browser code never reaches lib/server, a builtin or a server package; lib/server may", () => {
    const ui = ruleOf("src/ui/pages/marketing/x.tsx")!;
    const lib = ruleOf("src/lib/filter/x.ts")!;
    const server = ruleOf("src/lib/server/x.ts")!;
    expect(check(ui, resolveSpecifier("src/ui/pages/x.tsx", "~/lib/server/env.ts")!, false)).toBe(ui.why);
    expect(check(ui, resolveSpecifier("src/ui/pages/x.tsx", "../../lib/server/logger.ts")!, true)).toBe(ui.why);
    expect(check(ui, "src/lib/protocol/event.ts", false)).toBeNull();
    expect(check(lib, resolveSpecifier("src/lib/har.ts", "./server/ids.ts")!, true)).toBe(lib.why);
    expect(check(lib, "src/lib/time/range.ts", false)).toBeNull();
    expect(check(server, "src/lib/protocol/event.ts", false)).toBeNull();
    expect(checkPackage(lib, "node:fs")).toBe(lib.why);
    expect(checkPackage(lib, "nodemailer")).toBe(lib.why);
    expect(checkPackage(lib, "@sinclair/typebox")).toBeNull();
    expect(checkPackage(ui, "node:crypto")).toBe(ui.why);
    expect(checkPackage(ui, "react-dom/client")).toBeNull();
    expect(checkPackage(server, "node:fs")).toBeNull();
    expect([..."import 'node:fs';".matchAll(importPattern)].map((m) => m[4])).toEqual(["node:fs"]);
  });

  test("browser code uses no server runtime global, comments aside", () => {
    expect(isBrowserCode("src/lib/har.ts")).toBe(true);
    expect(isBrowserCode("src/lib/server/env.ts")).toBe(false);
    expect(isBrowserCode("src/ui/shell.tsx")).toBe(true);
    expect(serverGlobalPattern.test(withoutComments("const home = process.env.HOME;"))).toBe(true);
    expect(serverGlobalPattern.test(withoutComments("const b = Bun.file(p);"))).toBe(true);
    expect(serverGlobalPattern.test(withoutComments("const d = import.meta.dir;"))).toBe(true);
    expect(serverGlobalPattern.test(withoutComments("/** Never reads process.env. */\nconst x = 1; // nor Bun.file\n"))).toBe(false);
    expect(serverGlobalPattern.test(withoutComments("const b = Buffer.from(bytes);"))).toBe(true);
  });
});
