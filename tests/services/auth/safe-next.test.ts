import { describe, expect, test } from "bun:test";
import { DEFAULT_NEXT, safeNext } from "~/services/auth/safe-next.ts";

const origin = "https://tapscope.example";

/** What a person who follows the redirect ends up on: our origin, exactly at the path we answered. */
function expectOurs(input: string, result: string): void {
  const where = `${JSON.stringify(input)} -> ${JSON.stringify(result)}`;
  const landed = new URL(result, origin);
  expect(landed.origin, where).toBe(origin);
  expect(landed.pathname + landed.search + landed.hash, where).toBe(result);
  expect(result.startsWith("//") || result.includes("\\"), where).toBe(false);
  expect(safeNext(result), `not idempotent: ${where}`).toBe(result);
}

/** A deterministic generator (mulberry32), so a failure names an input that reproduces. */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let r = Math.imul(a ^ (a >>> 15), 1 | a);
    r = (r + Math.imul(r ^ (r >>> 7), 61 | r)) ^ r;
    return ((r ^ (r >>> 14)) >>> 0) / 4294967296;
  };
}

describe("safeNext", () => {
  test("keeps same-origin paths with query and fragment", () => {
    for (const next of ["/dashboard", "/dashboard/my-ns/live", "/dashboard/a/requests?filter=eyJ9#x", "/login"]) {
      expect(safeNext(next)).toBe(next);
    }
  });

  test("refuses anything a browser could read as another origin", () => {
    const attacks = [
      "//evil.com",
      "///evil.com",
      "/\\evil.com",
      "\\\\evil.com",
      "/\\/evil.com",
      "https://evil.com",
      "http:evil.com",
      "javascript:alert(1)",
      "data:text/html,<script>",
      "evil.com",
      "/\t/evil.com",
      "/\n/evil.com",
      "/\r\n/evil.com",
      "/ /evil.com",
      "/\u0000",
      "",
      undefined,
      null,
      `/${"a".repeat(3000)}`,
    ];
    for (const next of attacks) expect(safeNext(next)).toBe("/dashboard");
  });

  test("normalises dot segments without leaving the origin", () => {
    expect(safeNext("/a/../b")).toBe("/b");
    expect(safeNext("/../../evil.com")).toBe("/evil.com");
  });

  test("refuses what dot segments or encodings turn into another origin, and is idempotent", () => {
    const tricky = [
      "/.//evil.test",
      "/./\\evil.test",
      "/..//evil.test",
      "/a/..//evil.test",
      "/a/../..//evil.test",
      "/%2e//evil.test",
      "/%2e%2e//evil.test",
      "/.%2e//evil.test",
      "/\\evil.test",
      "/%2F/evil.test",
      "/%5C/evil.test",
      "/%2F%2Fevil.test",
      "/.\t//evil.test",
      "/\t/evil.test",
      "/\n/evil.test",
      "/.\n//evil.test",
      "/%09/evil.test",
      "/%0a/evil.test",
      "/@evil.test",
      "/evil.test:443",
      "/?//evil.test",
      "/#//evil.test",
      `/${"é".repeat(1000)}`,
    ];
    for (const next of tricky) expectOurs(next, safeNext(next));
    expect(safeNext("/.//evil.test")).toBe(DEFAULT_NEXT);
    expect(safeNext("/..//evil.test")).toBe(DEFAULT_NEXT);
    expect(safeNext("/%2e%2e//evil.test")).toBe(DEFAULT_NEXT);
  });

  test("fuzz: whatever the input, the answer lands on our origin at exactly that path, and is a fixed point", () => {
    const pieces = [
      "/",
      "//",
      "\\",
      ".",
      "..",
      "./",
      "../",
      "%2e",
      "%2E",
      "%2f",
      "%2F",
      "%5c",
      "%09",
      "%0a",
      "%00",
      "\t",
      "\n",
      "\r",
      " ",
      "\u0000",
      "\u007f",
      "\u00a0",
      "\u3000",
      "é",
      "evil.test",
      ":",
      "@",
      "?",
      "#",
      "&",
      "%",
      "a",
    ];
    const next = random(14);
    for (let i = 0; i < 20_000; i++) {
      let input = next() < 0.9 ? "/" : "";
      const n = 1 + Math.floor(next() * 8);
      for (let j = 0; j < n; j++) input += pieces[Math.floor(next() * pieces.length)];
      expectOurs(input, safeNext(input));
    }
  });
});
