import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { filterExamples, placeholderExample, suggestedFilters } from "~/lib/filter/examples.ts";
import { parseFilter } from "~/lib/filter/parse.ts";

// Every filter shown as an example must be one the filter language accepts: a person copies them.
const root = join(import.meta.dir, "../../..");

/** The lines of the fenced `text` blocks of the filter language's page: its examples. */
function docsExamples(): string[] {
  const page = readFileSync(join(root, "docs/site/filters.md"), "utf8");
  const blocks = [...page.matchAll(/```text\n([\s\S]*?)```/g)].map((m) => m[1] ?? "");
  return blocks.flatMap((block) => block.split("\n")).filter((line) => line.trim() !== "");
}

describe("filter examples", () => {
  test("the list holds the placeholder and every built-in suggestion", () => {
    expect(filterExamples).toContain(placeholderExample);
    for (const suggestion of suggestedFilters) expect(filterExamples).toContain(suggestion);
  });

  test.each([...filterExamples])("%s parses", (example) => {
    const parsed = parseFilter(example);
    expect(parsed.ok ? "ok" : parsed.error.message).toBe("ok");
  });

  test("the filter language's page has examples, and each parses", () => {
    const examples = docsExamples();
    expect(examples.length).toBeGreaterThan(0);
    for (const example of examples) {
      const parsed = parseFilter(example);
      expect(parsed.ok ? `${example}: ok` : `${example}: ${parsed.error.message}`).toBe(`${example}: ok`);
    }
  });

  test("the old placeholder's 'or' is refused (what this list guards against)", () => {
    expect(parseFilter('response.status >= 500 or request.url contains "/api/"').ok).toBe(false);
  });
});
