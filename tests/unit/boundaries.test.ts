import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { Glob } from "bun";

/**
 * The dependency direction of ARCHITECTURE.md, checked on every import so a violation fails the
 * suite instead of waiting for review.
 */
const root = resolve(import.meta.dir, "../..");

type Rule = { folder: string; mayImport: string[]; why: string };

const rules: Rule[] = [
  { folder: "src/ui/", mayImport: ["src/ui/", "src/lib/"], why: "ui runs in the browser: only ui and lib" },
  { folder: "src/lib/", mayImport: ["src/lib/"], why: "lib is the bottom layer" },
  { folder: "src/store/", mayImport: ["src/store/", "src/lib/"], why: "the store knows only lib" },
  {
    folder: "src/agent/seccomp/",
    mayImport: ["src/agent/", "src/lib/"],
    why: "the capture engine depends on nothing of the server",
  },
  { folder: "src/agent/relay/", mayImport: ["src/agent/", "src/lib/"], why: "the capture engine depends on nothing of the server" },
  { folder: "src/agent/parse/", mayImport: ["src/agent/", "src/lib/"], why: "the capture engine depends on nothing of the server" },
  { folder: "src/api/", mayImport: ["src/api/", "src/services/", "src/lib/", "src/server.ts"], why: "controllers stay thin: no database, no store" },
  { folder: "src/ws/", mayImport: ["src/ws/", "src/api/", "src/services/", "src/lib/", "src/server.ts"], why: "sockets stay thin: no database, no store" },
  { folder: "src/routes/", mayImport: ["src/routes/", "src/ssr/", "src/ui/", "src/services/", "src/lib/", "src/server.ts"], why: "loaders call services, never the database" },
];

const importPattern = /(?:^|[\s;])(?:import|export)\s[^"'`]*?from\s*["']([^"']+)["']|import\(\s*["']([^"']+)["']\s*\)/g;

function resolveSpecifier(file: string, spec: string): string | null {
  if (spec.startsWith("~/")) return join("src", spec.slice(2));
  if (spec.startsWith("#db/")) return join("db", spec.slice(4));
  if (spec.startsWith(".")) return relative(root, resolve(dirname(join(root, file)), spec));
  return null; // a package or a builtin
}

function violations(): { found: string[]; checked: number } {
  const found: string[] = [];
  let checked = 0;
  for (const file of new Glob("src/**/*.{ts,tsx}").scanSync({ cwd: root })) {
    const rule = rules.find((r) => file.startsWith(r.folder));
    if (!rule) continue;
    checked++;
    const text = readFileSync(join(root, file), "utf8");
    for (const match of text.matchAll(importPattern)) {
      const spec = match[1] ?? match[2];
      if (!spec) continue;
      const target = resolveSpecifier(file, spec);
      if (target === null) continue;
      if (!rule.mayImport.some((allowed) => target === allowed || target.startsWith(allowed))) {
        found.push(`${file} imports ${spec} (${rule.why})`);
      }
    }
  }
  return { found, checked };
}

describe("dependency direction", () => {
  test("every import follows the folder table of ARCHITECTURE.md", () => {
    const { found, checked } = violations();
    expect(checked).toBeGreaterThan(100);
    expect(found).toEqual([]);
  });

  test("the checker sees a violation when there is one", () => {
    const rule = rules.find((r) => r.folder === "src/ui/");
    const target = resolveSpecifier("src/ui/x.tsx", "#db/client.ts");
    expect(target).toBe("db/client.ts");
    expect(rule?.mayImport.some((allowed) => target?.startsWith(allowed))).toBe(false);
    expect(resolveSpecifier("src/ui/live/a.tsx", "../../services/x.ts")).toBe("src/services/x.ts");
  });
});
