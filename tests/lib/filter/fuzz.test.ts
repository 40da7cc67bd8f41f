import { describe, expect, test } from "bun:test";
import { compileFilter } from "~/lib/filter/evaluate.ts";
import { parseFilter } from "~/lib/filter/parse.ts";
import { compileRegex, RegexSyntaxError } from "~/lib/filter/regex.ts";
import { tracedEvent as makeEvent } from "../../support/event-factory.ts";

/** A small deterministic PRNG so a failure reproduces. */
function rng(seed: number) {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

function pick<T>(r: () => number, items: readonly T[]): T {
  return items[Math.floor(r() * items.length)]!;
}

/** Random patterns from the supported grammar (no classes starting with "]", which JS reads differently). */
function randomPattern(r: () => number, depth = 0): string {
  const atoms = ["a", "b", "/", "\\.", ".", "[ab]", "[^a]", "[a-c]", "\\d", "\\w", "x", "0"];
  let out = "";
  const n = 1 + Math.floor(r() * 4);
  for (let i = 0; i < n; i++) {
    let atom =
      depth < 2 && r() < 0.25 ? `(${randomPattern(r, depth + 1)}${r() < 0.4 ? `|${randomPattern(r, depth + 1)}` : ""})` : pick(r, atoms);
    const q = r();
    if (q < 0.15) atom += "*";
    else if (q < 0.3) atom += "+";
    else if (q < 0.4) atom += "?";
    else if (q < 0.45) atom += `{${Math.floor(r() * 3)},${2 + Math.floor(r() * 2)}}`;
    out += atom;
  }
  if (r() < 0.2) out = `^${out}`;
  if (r() < 0.2) out += "$";
  return out;
}

function randomInput(r: () => number): string {
  const chars = "ab/.x0129c-";
  let s = "";
  const n = Math.floor(r() * 12);
  for (let i = 0; i < n; i++) s += chars[Math.floor(r() * chars.length)];
  return s;
}

describe("fuzz", () => {
  test("the matcher agrees with JavaScript's RegExp on 3,000 random patterns x 20 inputs", () => {
    const r = rng(42);
    for (let k = 0; k < 3000; k++) {
      const pattern = randomPattern(r);
      const mine = compileRegex(pattern);
      const native = new RegExp(pattern);
      for (let j = 0; j < 20; j++) {
        const input = randomInput(r);
        const expected = native.test(input);
        if (mine.test(input) !== expected) throw new Error(`${pattern} on ${JSON.stringify(input)}: expected ${expected}`);
      }
    }
  });

  test("random text never throws out of the parser; error positions stay inside the text", () => {
    const r = rng(7);
    const pieces = [
      "request.method",
      "response.status",
      "request.url",
      "duration",
      "==",
      "!=",
      "<",
      ">=",
      "&&",
      "||",
      "(",
      ")",
      '"GET"',
      "'/a'",
      "500",
      "1.5s",
      "matches",
      "contains",
      '"(a+)+$"',
      '"[z-a]"',
      "\\",
      '"',
      " ",
      "☃",
      "\u0000",
      "=",
      "!",
    ];
    for (let k = 0; k < 20_000; k++) {
      let src = "";
      const n = Math.floor(r() * 10);
      for (let i = 0; i < n; i++) src += pick(r, pieces) + (r() < 0.7 ? " " : "");
      const result = parseFilter(src);
      if (result.ok) {
        expect(typeof compileFilter(result.expr)(makeEvent())).toBe("boolean");
      } else {
        expect(result.error.position).toBeGreaterThanOrEqual(0);
        expect(result.error.position).toBeLessThanOrEqual(src.length);
        expect(result.error.message.length).toBeGreaterThan(0);
      }
    }
  });

  test("random bytes as a regex: a compiled matcher or a positioned RegexSyntaxError, nothing else", () => {
    const r = rng(99);
    const chars = "ab()[]{}|*+?^$\\.-,0123456789dDwWsSbBx:=!<P";
    for (let k = 0; k < 20_000; k++) {
      let p = "";
      const n = Math.floor(r() * 14);
      for (let i = 0; i < n; i++) p += chars[Math.floor(r() * chars.length)];
      try {
        compileRegex(p).test("ab(a)[0]{1}|x");
      } catch (err) {
        if (!(err instanceof RegexSyntaxError)) throw new Error(`${JSON.stringify(p)} threw ${err}`);
        expect(err.position).toBeGreaterThanOrEqual(0);
        expect(err.position).toBeLessThanOrEqual(p.length);
      }
    }
  });
});
