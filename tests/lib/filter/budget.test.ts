import { describe, expect, test } from "bun:test";
import { boundedPredicate, compileFilterChips, filterMeter, filterStepsPerEvent, maxMatchedUrlLength } from "~/lib/filter/evaluate.ts";
import { filterLimits, parseFilterChips } from "~/lib/filter/parse.ts";
import { compileRegex } from "~/lib/filter/regex.ts";
import { tracedEvent as makeEvent } from "../../support/event-factory.ts";
import { rng } from "../../support/rng.ts";

/** A random a/b path: what makes `[ab]*a[ab]{99}z`'s DFA (2^100 states) rebuild a state on nearly every character. */
function abPath(length: number, seed = 1): string {
  const r = rng(seed);
  let s = "/";
  while (s.length < length) s += r() < 0.5 ? "a" : "b";
  return s;
}

const hostile = "[ab]*a[ab]{99}z";

describe("the matcher's step meter", () => {
  test("a DFA-hostile pattern on a 4,200-character URL stops within its step budget", () => {
    const re = compileRegex(hostile);
    const url = abPath(4200);
    const meter = { left: 50_000 };
    const t0 = performance.now();
    expect(re.test(url, maxMatchedUrlLength, meter)).toBe(false);
    expect(meter.left).toBeLessThan(0);
    // It overdraws by at most one DFA state's build (a few hundred steps), not by the rest of the URL.
    expect(meter.left).toBeGreaterThan(-2_000);
    expect(performance.now() - t0).toBeLessThan(50);
    // Unmetered, the same test costs hundreds of thousands of steps: the budget is what bounds it.
    const unlimited = { left: Number.MAX_SAFE_INTEGER };
    re.test(url, maxMatchedUrlLength, unlimited);
    expect(Number.MAX_SAFE_INTEGER - unlimited.left).toBeGreaterThan(300_000);
  });

  test("a spent meter answers at once, and ordinary patterns cost about a step per character", () => {
    const re = compileRegex("^/api/v[0-9]+/users/\\d+$");
    expect(re.test("/api/v2/users/42", Number.POSITIVE_INFINITY, { left: -1 })).toBe(false);
    const url = `/api/v2/users/${"1".repeat(2000)}`;
    re.test(url); // warm the DFA cache
    const meter = { left: 1_000_000 };
    expect(re.test(url, maxMatchedUrlLength, meter)).toBe(true);
    expect(1_000_000 - meter.left).toBeLessThanOrEqual(url.length + re.source.length + 64);
  });

  test("with a budget it can afford, the meter changes no answer: same as RegExp on 2,000 random safe patterns", () => {
    const r = rng(5);
    const atoms = ["a", "b", "/", "\\.", ".", "[ab]", "[^a]", "\\d", "\\w", "x"];
    const quantifiers = ["", "", "*", "+", "?", "{1,3}"];
    for (let k = 0; k < 2000; k++) {
      let pattern = r() < 0.2 ? "^" : "";
      const n = 1 + Math.floor(r() * 5);
      for (let i = 0; i < n; i++) {
        const atom =
          r() < 0.2
            ? `(${atoms[Math.floor(r() * atoms.length)]}|${atoms[Math.floor(r() * atoms.length)]})`
            : atoms[Math.floor(r() * atoms.length)]!;
        pattern += atom + quantifiers[Math.floor(r() * quantifiers.length)];
      }
      if (r() < 0.2) pattern += "$";
      const mine = compileRegex(pattern);
      const native = new RegExp(pattern);
      for (let j = 0; j < 10; j++) {
        let input = "";
        const len = Math.floor(r() * 40);
        for (let i = 0; i < len; i++) input += "ab/.x09"[Math.floor(r() * 7)];
        const meter = { left: 100_000 };
        const got = mine.test(input, Number.POSITIVE_INFINITY, meter);
        if (meter.left < 0) throw new Error(`${pattern} on ${JSON.stringify(input)} overdrew its meter`);
        if (got !== native.test(input)) throw new Error(`${pattern} on ${JSON.stringify(input)}: expected ${native.test(input)}`);
      }
    }
  });
});

describe("filters under a step meter", () => {
  test("64 OR-ed hostile clauses on the reproduction's URL stop at the meter and name the clause that ran it out", () => {
    const clause = `request.url matches "${hostile}"`;
    const chips = ['request.method == "GET"', Array.from({ length: 63 }, () => clause).join(" || ")];
    const meter = filterMeter();
    const compiled = compileFilterChips(chips, meter);
    if (!compiled.ok) throw new Error(compiled.error.message);
    const event = makeEvent({ http_req_method: "GET", http_req_path: abPath(4200) });
    meter.left = filterStepsPerEvent;
    const t0 = performance.now();
    compiled.predicate(event);
    // Unmetered, these clauses take seconds over this URL; metered they stop within the per-event budget (a few ms
    // on an idle machine): a second tells the two apart on a busy one.
    expect(performance.now() - t0).toBeLessThan(1000);
    expect(meter.left).toBeLessThan(0);
    expect(meter.ranOutAt?.index).toBe(1);
    expect(meter.ranOutAt?.position).toBe(0);
  });

  test("the patterns of all chips together are bounded in NFA states, so compiling a config stays cheap", () => {
    // (a{100}){39}: about 3,900 states, under the per-pattern bound of 4,000; five of them are over the total.
    const clause = (k: number) => `request.url matches "(a{100}){39}${k}"`;
    const ok = parseFilterChips([clause(1), `${clause(2)} || ${clause(3)}`]);
    expect(ok.ok).toBe(true);
    const chips = [clause(1), `${clause(2)} || ${clause(3)}`, `request.method == "GET" && ${clause(4)}`, `duration > 1s || ${clause(5)}`];
    const t0 = performance.now();
    const refused = parseFilterChips(chips);
    // Refused by counting states, before any is built (building them all would take seconds).
    expect(performance.now() - t0).toBeLessThan(1000);
    expect(refused).toEqual({ ok: false, error: { index: 3, position: 37, message: expect.stringContaining("too complex") } });
    expect(filterLimits.maxRegexStates).toBeLessThan(5 * 3900);
    const compiled = compileFilterChips(chips.slice(0, 3));
    expect(compiled.ok && compiled.compileSteps).toBeGreaterThan(4 * 4 * 3900);
  });

  test("a long contains on a long URL is charged for what it may compare", () => {
    const meter = filterMeter();
    const compiled = compileFilterChips([`request.url contains "${"a".repeat(2000)}b"`], meter);
    if (!compiled.ok) throw new Error(compiled.error.message);
    meter.left = 1000;
    compiled.predicate(makeEvent({ http_req_path: "a".repeat(8000) }));
    expect(meter.left).toBeLessThan(0);
    expect(meter.ranOutAt).toEqual({ index: 0, position: 0 });
  });

  test("boundedPredicate: ordinary filters answer as before; an event past the budget does not match", () => {
    const ordinary = boundedPredicate(['request.url matches "^/users/[0-9]+$"', 'request.method == "GET"'])!;
    expect(ordinary(makeEvent({ http_req_path: "/users/42", http_req_method: "GET" }))).toBe(true);
    expect(ordinary(makeEvent({ http_req_path: "/users/x", http_req_method: "GET" }))).toBe(false);
    // `[ab]*a[ab]{99}` does match a long random a/b URL, but only a meter of thousands of steps finds out.
    const costly = boundedPredicate([`request.url matches "[ab]*a[ab]{99}"`], 1_000)!;
    const generous = boundedPredicate([`request.url matches "[ab]*a[ab]{99}"`], 10_000_000)!;
    const event = makeEvent({ http_req_path: abPath(4200) });
    expect(generous(event)).toBe(true);
    expect(costly(event)).toBe(false);
    expect(boundedPredicate(["response.status >> 1"])).toBeNull();
  });
});
