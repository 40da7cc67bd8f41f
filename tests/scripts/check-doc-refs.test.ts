import { afterEach, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { checkDocRefs } from "../../scripts/check-doc-refs.ts";

/** `npm run check`'s doc-reference check, on this repository and on small trees made for each case. */
const root = resolve(import.meta.dir, "../..");
const trees: string[] = [];
afterEach(() => {
  for (const dir of trees.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function tree(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), "tapscope-doc-refs-"));
  trees.push(dir);
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, name)), { recursive: true });
    writeFileSync(join(dir, name), text);
  }
  return dir;
}

const base = {
  ".gitignore": "node_modules\n/build/\n",
  "src/store/table.ts": "export const x = 1;\n",
  "src/engines/live/hub.ts": "export const y = 1;\n",
  "docs/spec-map.md": "| 9 Constants | buckets | `src/store/table.ts` |\n",
};

test("every path this repository's docs and comments name exists, and only the spec map cites the spec's sections", () => {
  expect(checkDocRefs(root)).toEqual([]);
});

test("a moved file named by a doc or a comment is reported with where it is named", () => {
  const dir = tree({
    ...base,
    "README.md": "The table is in `src/store/table.ts`; the upgrade in `src/store/upgrade`.\n",
    "src/engines/live/cluster.ts":
      "/**\n * Wired by engines/cluster/cluster-live.ts; hub in engines/live/hub.ts.\n */\nexport const z = 1;\n",
    "docs/adr/0001-x.md": "# 0001\n\nSee [the table](../../src/store/table.ts) and [the old one](../../src/store/old.ts).\n",
  });
  expect(checkDocRefs(dir)).toEqual([
    { file: "README.md", line: 1, message: "names src/store/upgrade, which does not exist" },
    { file: "docs/adr/0001-x.md", line: 3, message: "names ../../src/store/old.ts, which does not exist" },
    { file: "src/engines/live/cluster.ts", line: 2, message: "names engines/cluster/cluster-live.ts, which does not exist" },
  ]);
});

test("code is read in its comments only; placeholders, globs, URLs, absolute paths and build output are not paths", () => {
  const dir = tree({
    ...base,
    "src/api/health.ts": [
      'const url = "src/not/a/comment.ts"; // the string is code, not a reference',
      "// served at /api/gone/route and http://127.0.0.1:3000/src/gone.ts; reads /usr/src/gone and build/client/x.js",
      "/* controllers in src/api/<area>/, tests in tests/e2e/*.e2e.ts (none yet) */",
      "export { url };",
    ].join("\n"),
    "tests/e2e/.keep": "",
    "docs/adr/.keep": "",
    "CONTRIBUTING.md": "Run `bun test ./tests/<folder>/<file>.test.ts`; ADRs are `docs/adr/<NNNN>-<title>.md`.\n",
  });
  expect(checkDocRefs(dir)).toEqual([]);
});

test("a folder someone adds is checked like the others, with no list to update", () => {
  const dir = tree({ ...base, "tools/gen.ts": "// writes tools/out.json\nexport {};\n" });
  expect(checkDocRefs(dir)).toEqual([{ file: "tools/gen.ts", line: 1, message: "names tools/out.json, which does not exist" }]);
});

test("a root document named but missing is reported", () => {
  const dir = tree({ ...base, "README.md": "See CONTRIBUTING.md and ARCHITECTURE.md.\n", "ARCHITECTURE.md": "# A\n" });
  expect(checkDocRefs(dir)).toEqual([{ file: "README.md", line: 1, message: "names CONTRIBUTING.md, which does not exist" }]);
});

/** Written apart, so that this file does not cite the spec itself. */
const spec = "spec";

test("a spec section cited outside the spec map is reported, in comments, test names and docs alike", () => {
  const dir = tree({
    ...base,
    "src/lib/time.ts": `/** ${spec} section 9: 120 buckets. */\nexport const buckets = 120;\n`,
    "tests/time.test.ts": `import { test } from "bun:test";\ntest("bucket choice (${spec} sections 5 and 9)", () => {});\n`,
    "docs/adr/0002-y.md": `# 0002\n\nThe calls of section 7 of the ${spec}.\nRFC 9113 section 3.4 is not the ${spec}.\n`,
    "docs/spec-map.md": `| 9 Constants | buckets (${spec} section 9) | \`src/store/table.ts\` |\n`,
  });
  const message = "cites a section of the product spec: name the file in docs/spec-map.md instead";
  expect(checkDocRefs(dir)).toEqual([
    { file: "docs/adr/0002-y.md", line: 3, message },
    { file: "src/lib/time.ts", line: 1, message },
    { file: "tests/time.test.ts", line: 2, message },
  ]);
});

test("the command exits non-zero and names each stale reference as file:line", () => {
  const dir = tree({ ...base, "README.md": "\nSee `src/gone.ts`.\n" });
  const run = Bun.spawnSync([process.execPath, join(root, "scripts/check-doc-refs.ts"), dir], { stderr: "pipe" });
  expect(run.exitCode).toBe(1);
  expect(run.stderr.toString()).toContain("README.md:2: names src/gone.ts, which does not exist");
  const clean = Bun.spawnSync([process.execPath, join(root, "scripts/check-doc-refs.ts"), tree(base)]);
  expect(clean.exitCode).toBe(0);
});

test("a merge's conflict markers left in a document are reported", () => {
  const dir = tree({ ...base, "bench/README.md": "## a\n<<<<<<< HEAD\nours\n=======\ntheirs\n>>>>>>> branch\n" });
  expect(checkDocRefs(dir)).toEqual([
    { file: "bench/README.md", line: 2, message: "holds a merge conflict marker" },
    { file: "bench/README.md", line: 6, message: "holds a merge conflict marker" },
  ]);
});
