/**
 * `bun scripts/check-doc-refs.ts [root]` (part of `npm run check`): every repository path named in the docs (every
 * markdown file) and in code comments exists, and the product spec's sections are cited in docs/spec-map.md alone.
 * It reads the tree as it is, so files other people add are checked the same way and no list here needs updating.
 *
 * A path is a word like `src/store/table.ts`, `engines/live/hub.ts` or `tests/e2e/` whose first folder is one of the
 * repository's top-level folders or one of src/'s (so `lib/protocol` means src/lib/protocol); it counts as found
 * relative to the repository, to src/, or to the file that names it. Glob and placeholder parts end the path there
 * (`src/api/<area>/` is checked as `src/api/`). Paths under ignored folders (build output) are not checked.
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import ts from "typescript";

export type Problem = { file: string; line: number; message: string };

const codeExtensions = [".ts", ".tsx", ".js", ".mjs", ".cjs"];
/** Files whose comments start with `#`. */
const hashCommentFile = (name: string) => /\.(sh|ya?ml|toml)$/.test(name) || name === "Dockerfile" || name === "run";
/** The one place the product spec's sections are cited. */
const specMap = "docs/spec-map.md";
const specCitation = /\bspec(?:'s)?\s+sections?\s+\d|\bsections?\s+\d+(?:\s*(?:,|and)\s*\d+)*\s+of\s+the\s+(?:product\s+)?spec\b|§\s*\d/i;

/** Names .gitignore leaves out without a wildcard (node_modules, /build/, ...): generated, so neither read nor checked. */
function ignoredNames(root: string): { anywhere: Set<string>; atRoot: Set<string> } {
  const anywhere = new Set([".git", "node_modules"]);
  const atRoot = new Set<string>();
  const gitignore = join(root, ".gitignore");
  if (!existsSync(gitignore)) return { anywhere, atRoot };
  for (const raw of readFileSync(gitignore, "utf8").split("\n")) {
    const line = raw.trim().replace(/\/$/, "");
    if (!line || line.startsWith("#") || /[*?[\]!]/.test(line)) continue;
    if (line.startsWith("/")) atRoot.add(line.slice(1));
    else anywhere.add(line);
  }
  return { anywhere, atRoot };
}

function walk(root: string, ignored: ReturnType<typeof ignoredNames>): string[] {
  const files: string[] = [];
  const visit = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (ignored.anywhere.has(entry.name) || (dir === root && ignored.atRoot.has(entry.name))) continue;
      const path = join(dir, entry.name);
      if (entry.isDirectory()) visit(path);
      else if (entry.isFile()) files.push(path);
    }
  };
  visit(root);
  return files;
}

function folders(dir: string, ignored: ReturnType<typeof ignoredNames>, isRoot: boolean): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true })
    .filter((e) => e.isDirectory() && !ignored.anywhere.has(e.name) && !(isRoot && ignored.atRoot.has(e.name)))
    .filter((e) => e.name === ".ci" || !e.name.startsWith("."))
    .map((e) => e.name);
}

/** The comments of a TypeScript or JavaScript file, each with the line it starts on. */
function codeComments(path: string, text: string): Array<{ line: number; text: string }> {
  const source = ts.createSourceFile(path, text, ts.ScriptTarget.Latest, false, path.endsWith("x") ? ts.ScriptKind.TSX : undefined);
  const seen = new Set<number>();
  const out: Array<{ line: number; text: string }> = [];
  const take = (ranges: ts.CommentRange[] | undefined) => {
    for (const range of ranges ?? []) {
      if (seen.has(range.pos)) continue;
      seen.add(range.pos);
      out.push({ line: source.getLineAndCharacterOfPosition(range.pos).line + 1, text: text.slice(range.pos, range.end) });
    }
  };
  const visit = (node: ts.Node) => {
    take(ts.getLeadingCommentRanges(text, node.getFullStart()));
    take(ts.getTrailingCommentRanges(text, node.getEnd()));
    ts.forEachChild(node, visit);
  };
  visit(source);
  take(ts.getLeadingCommentRanges(text, source.endOfFileToken.getFullStart()));
  return out.sort((a, b) => a.line - b.line);
}

function hashComments(text: string): Array<{ line: number; text: string }> {
  return text.split("\n").flatMap((line, i) => {
    const at = line.search(/(^|\s)#(?!!)/);
    return at < 0 ? [] : [{ line: i + 1, text: line.slice(at) }];
  });
}

export function checkDocRefs(rootArg: string): Problem[] {
  const root = resolve(rootArg);
  const ignored = ignoredNames(root);
  const tops = new Set([...folders(root, ignored, true), ...folders(join(root, "src"), ignored, false)]);
  const problems: Problem[] = [];
  // A word of path characters not preceded by one (so `/usr/lib/x` and URLs' paths are not taken apart).
  const pathWord = /(?<![\w./@~:-])(?:\.{1,2}\/)*[\w.@-]+(?:\/[\w.@-]*)+/g;

  const exists = (word: string, from: string) =>
    [join(root, word), join(root, "src", word), join(dirname(from), word)].some((candidate) => existsSync(candidate));

  const check = (file: string, line: number, text: string) => {
    const name = relative(root, file);
    for (const match of text.matchAll(pathWord)) {
      let word = match[0].replace(/[.]+$/, "").replace(/^\.\//, "");
      if (word.startsWith("../")) {
        // Relative to the file: checked when it lands in one of the repository's folders.
        word = relative(root, resolve(dirname(file), word));
        if (word.startsWith("..")) continue;
      }
      if (!tops.has(word.split("/")[0] ?? "")) continue;
      if (!exists(word, file)) problems.push({ file: name, line, message: `names ${match[0].replace(/[.]+$/, "")}, which does not exist` });
    }
    // Root documents by name (README.md, CONTRIBUTING.md): a bare word, so only capitalised .md names.
    for (const match of text.matchAll(/(?<![\w./-])[A-Z][A-Z_]+\.md\b/g)) {
      if (!existsSync(join(root, match[0])) && !existsSync(join(dirname(file), match[0]))) {
        problems.push({ file: name, line, message: `names ${match[0]}, which does not exist` });
      }
    }
  };

  /** Spec citations anywhere in a file (test names too), not in comments alone; and a merge's conflict markers left in. */
  const checkSpecCitations = (file: string, text: string) => {
    const name = relative(root, file);
    text.split("\n").forEach((line, i) => {
      if (/^(?:<{7}|>{7}) /.test(line)) problems.push({ file: name, line: i + 1, message: "holds a merge conflict marker" });
    });
    if (name === specMap) return;
    text.split("\n").forEach((line, i) => {
      if (specCitation.test(line)) {
        problems.push({ file: name, line: i + 1, message: `cites a section of the product spec: name the file in ${specMap} instead` });
      }
    });
  };

  for (const file of walk(root, ignored)) {
    const base = file.slice(file.lastIndexOf("/") + 1);
    const isCode = codeExtensions.some((ext) => file.endsWith(ext)) && !file.endsWith(".d.ts");
    if (file.endsWith(".md") || isCode) {
      const text = readFileSync(file, "utf8");
      checkSpecCitations(file, text);
      const parts = file.endsWith(".md") ? [{ line: 1, text }] : codeComments(file, text);
      for (const part of parts) {
        const lines = part.text.split("\n");
        for (let i = 0; i < lines.length; i++) check(file, part.line + i, lines[i] ?? "");
      }
    } else if (hashCommentFile(base) && statSync(file).size < 1_000_000) {
      for (const comment of hashComments(readFileSync(file, "utf8"))) check(file, comment.line, comment.text);
    }
  }
  return problems.sort((a, b) => (a.file < b.file ? -1 : a.file > b.file ? 1 : a.line - b.line));
}

if (import.meta.main) {
  const problems = checkDocRefs(process.argv[2] ?? join(import.meta.dir, ".."));
  for (const p of problems) console.error(`${p.file}:${p.line}: ${p.message}`);
  if (problems.length > 0) {
    console.error(`check-doc-refs: ${problems.length} stale reference${problems.length === 1 ? "" : "s"}`);
    process.exit(1);
  }
  console.log("check-doc-refs: every path named in docs and comments exists; spec sections are cited in docs/spec-map.md only");
}
