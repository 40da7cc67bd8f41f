import { expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { filterFieldList, keyOf, operatorsOf } from "~/lib/filter/fields.ts";
import { parseFilter } from "~/lib/filter/parse.ts";

const doc = readFileSync(join(import.meta.dir, "../../docs/site/filters.md"), "utf8");

/** The rows of the docs' field table: name (as written) → the row's cells. */
function fieldRows(): Map<string, string[]> {
  const rows = new Map<string, string[]>();
  for (const line of doc.split("\n")) {
    const cells = line.match(/^\| `([^`]+)` \|(.*)\|$/);
    if (!cells) continue;
    rows.set(cells[1]!.replace(/\["(name|key)"\]$/, ""), cells[2]!.split(" | "));
  }
  return rows;
}

test("docs/site/filters.md lists every field with the operators it takes and an example that parses", () => {
  const rows = fieldRows();
  expect([...rows.keys()]).toEqual(filterFieldList.map((f) => f.name));
  for (const f of filterFieldList) {
    const [ops, , example] = rows.get(f.name)!;
    const listed = [...ops!.matchAll(/`([^`]+)`/g)].map((m) => m[1]);
    const taken = new Set([...operatorsOf(f, keyOf(f) !== "none"), ...(keyOf(f) === "optional" ? operatorsOf(f, false) : [])]);
    expect(new Set(listed)).toEqual(taken);
    const text = example!.trim().replace(/^`|`$/g, "").replace(/\\\|/g, "|");
    expect(parseFilter(text).ok).toBe(true);
  }
});

test("every example in the docs' code blocks parses", () => {
  const blocks = [...doc.matchAll(/```text\n([\s\S]*?)```/g)].flatMap((m) => m[1]!.trim().split("\n"));
  expect(blocks.length).toBeGreaterThan(3);
  for (const line of blocks) expect({ line, ok: parseFilter(line).ok }).toEqual({ line, ok: true });
});
