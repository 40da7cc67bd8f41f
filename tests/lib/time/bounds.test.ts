import { describe, expect, test } from "bun:test";
import { AppError } from "~/lib/errors.ts";
import { checkTimeRange, earliestMs, timeRangeProblem } from "~/lib/time/bounds.ts";
import { chooseBucketMs } from "~/lib/time/buckets.ts";
import {
  endingAt,
  gridRange,
  isAllowedRange,
  moveLeftHandle,
  moveRightHandle,
  newInterval,
  panFocus,
  presets,
  shiftGlobal,
  zoomToFocus,
} from "~/lib/time/range.ts";
import { chooseTickStep, ticks } from "~/lib/time/ticks.ts";
import { decodeState, defaultState, encodeState } from "~/ui/explorer/explorer-state.ts";

const S = 1000;
const M = 60 * S;
const H = 60 * M;
const D = 24 * H;
// Not on a 30 s boundary, as "now" seldom is.
const now = Date.UTC(2026, 10, 24, 16, 41, 7, 250);

describe("the bucket size of each preset follows the span alone", () => {
  const expected: Record<string, number> = {
    "5m": 5 * S,
    "15m": 30 * S,
    "1h": 30 * S,
    "6h": 5 * M,
    "24h": 30 * M,
    "3d": 1 * H,
    "7d": 3 * H,
  };
  for (const p of presets) {
    test(`${p.label} ending now`, () => {
      const g = gridRange(endingAt(p.ms, now));
      expect(g.bucketMs).toBe(expected[p.label] as number);
      // The chart is exactly the preset: it starts at its start and ends at now (next whole second).
      expect(g.endMs).toBe(Math.ceil(now / 1000) * 1000);
      expect(g.endMs - g.startMs).toBe(p.ms);
      expect(g.count).toBeLessThanOrEqual(121);
    });
  }
  test("the 1h preset is 30 s buckets on round half minutes, the first and last cut by the range", () => {
    const g = gridRange(endingAt(H, now));
    expect(g).toMatchObject({ bucketMs: 30 * S, count: 121, originMs: Date.UTC(2026, 10, 24, 15, 41, 0) });
  });
});

describe("the brush stays inside the global range", () => {
  const global = endingAt(H, now);
  const g = gridRange(global);
  test("handles, pan and new intervals never pass the global end or start", () => {
    const focus = { startMs: global.startMs + 10 * M, endMs: global.startMs + 20 * M };
    expect(moveRightHandle(global, focus, global.endMs + 5 * H).endMs).toBe(global.endMs);
    expect(moveLeftHandle(global, focus, global.startMs - 5 * H).startMs).toBe(global.startMs);
    expect(panFocus(global, focus, 10 * H)).toEqual({ startMs: global.endMs - 10 * M, endMs: global.endMs });
    expect(panFocus(global, focus, -10 * H)).toEqual({ startMs: global.startMs, endMs: global.startMs + 10 * M });
    const late = newInterval(global, global.endMs - 10 * S, global.endMs + H);
    expect(late.endMs).toBe(global.endMs);
    expect(late.startMs).toBeLessThan(late.endMs);
    expect(newInterval(global, global.endMs + H, global.endMs + 2 * H).endMs).toBe(global.endMs);
  });
  test("zoom to a focus at the end stays inside the old range", () => {
    const focus = newInterval(global, global.endMs - 5 * M, global.endMs + H);
    const zoomed = zoomToFocus(focus);
    expect(zoomed.endMs).toBeLessThanOrEqual(g.endMs);
    expect(zoomed.startMs).toBeGreaterThanOrEqual(g.startMs);
    expect(isAllowedRange(zoomed, now)).toBe(true);
  });
});

describe("time ranges are bounded where they enter (lib/time/bounds.ts)", () => {
  test("refused: huge, non-finite, fractional, reversed, empty, too early, too late, too long", () => {
    const cases: [unknown, string][] = [
      [{ lowerMs: 0, upperMs: 1e300 }, "must be whole milliseconds"],
      [{ lowerMs: now - H, upperMs: Number.NaN }, "must be whole milliseconds"],
      [{ lowerMs: now - H, upperMs: Number.POSITIVE_INFINITY }, "must be whole milliseconds"],
      [{ lowerMs: now - H + 0.5, upperMs: now }, "must be whole milliseconds"],
      [{ lowerMs: "1", upperMs: now }, "must be whole milliseconds"],
      [{ lowerMs: now, upperMs: now - H }, "is empty"],
      [{ lowerMs: now, upperMs: now }, "is empty"],
      [{ lowerMs: -H, upperMs: now }, "starts before 2000-01-01"],
      [{ lowerMs: 0, upperMs: H }, "starts before 2000-01-01"],
      [{ lowerMs: now, upperMs: now + 2 * D }, "ends more than a day from now"],
      [{ lowerMs: now - 500 * D, upperMs: now }, "is longer than 400 days"],
      [null, "is required"],
    ];
    for (const [range, problem] of cases) {
      expect(timeRangeProblem(range, now)).toContain(problem);
      expect(() => checkTimeRange(range, "global time range", now)).toThrow(`global time range ${problem}`);
    }
    try {
      checkTimeRange({ lowerMs: 0, upperMs: 1e300 }, "global time range", now);
    } catch (err) {
      expect(err).toBeInstanceOf(AppError);
      expect((err as AppError).status).toBe(400);
    }
  });
  test("accepted: presets, a year back, the first day of 2000, a minute into the future", () => {
    for (const p of presets) expect(timeRangeProblem({ lowerMs: now - p.ms, upperMs: now }, now)).toBeNull();
    expect(timeRangeProblem({ lowerMs: now - 365 * D, upperMs: now }, now)).toBeNull();
    expect(timeRangeProblem({ lowerMs: earliestMs, upperMs: earliestMs + D }, now)).toBeNull();
    expect(checkTimeRange({ lowerMs: now - H, upperMs: now + M }, "range", now)).toEqual({ lowerMs: now - H, upperMs: now + M });
  });
  test("the range controls cannot shift past a day from now", () => {
    const global = endingAt(H, now);
    expect(isAllowedRange(shiftGlobal(global, -1), now)).toBe(true);
    let forward = global;
    // 15 minutes a shift: 95 of them end 23:45 from now, the 96th a day and 0.75 s from now.
    for (let i = 0; i < 95; i++) forward = shiftGlobal(forward, 1);
    expect(isAllowedRange(forward, now)).toBe(true);
    expect(isAllowedRange(shiftGlobal(forward, 1), now)).toBe(false);
  });
});

describe("axis ticks answer at once for any span", () => {
  test("huge, NaN, infinite, negative and reversed spans", () => {
    const started = performance.now();
    expect(ticks(0, 1e300, "UTC").length).toBeLessThanOrEqual(13);
    expect(ticks(-1e300, 1e300, "UTC").length).toBeLessThanOrEqual(13);
    expect(ticks(0, Number.NaN, "UTC")).toEqual([]);
    expect(ticks(Number.NaN, 0, "UTC")).toEqual([]);
    expect(ticks(0, Number.POSITIVE_INFINITY, "Local")).toEqual([]);
    expect(ticks(now, now - H, "UTC")).toEqual([]);
    expect(ticks(-3 * H, -H, "UTC").length).toBeGreaterThan(0);
    expect(chooseTickStep(1e300)).toBeGreaterThan(0);
    expect(chooseTickStep(Number.NaN)).toBe(30 * D);
    const year = ticks(now - 400 * D, now, "UTC");
    expect(year.length).toBeGreaterThan(3);
    expect(year.length).toBeLessThanOrEqual(13);
    expect(performance.now() - started).toBeLessThan(50);
  });
  test("bucket sizes too: 1e300 in closed form, NaN refused", () => {
    expect(chooseBucketMs(0, 1e300)).toBeGreaterThan(0);
    expect(() => chooseBucketMs(0, Number.NaN)).toThrow("time range must be finite");
  });
});

describe("the explorer's URL state falls back to the default range", () => {
  const wire = (global: unknown, focus: unknown = null) =>
    btoa(
      JSON.stringify({
        clauses: [{ type: "Number", column: "http_resp_status_code", op: "GreaterThanOrEquals", value: 500 }],
        global,
        focus,
      }),
    );
  test("a huge, early, future or fractional global range gives the last hour; the filter stays", () => {
    for (const global of [
      { lowerMs: 0, upperMs: 1e300 },
      { lowerMs: 0, upperMs: now },
      { lowerMs: now, upperMs: now + 10 * D },
      { lowerMs: now - H + 0.5, upperMs: now },
      { lowerMs: "x", upperMs: now },
    ]) {
      const state = decodeState(wire(global), now);
      expect(state?.global).toEqual(defaultState(now).global);
      expect(state?.focus).toBeNull();
      // The old link's status clause stays, read as the filter-language chip that says the same.
      expect(state?.text).toEqual(["response.status >= 500"]);
      expect(state?.clauses).toEqual([]);
    }
  });
  test("a good range is kept; a focus outside it is dropped", () => {
    const global = { lowerMs: now - H, upperMs: now };
    expect(decodeState(wire(global, { lowerMs: now - 10 * M, upperMs: now - 5 * M }), now)?.focus).toEqual({
      startMs: now - 10 * M,
      endMs: now - 5 * M,
    });
    expect(decodeState(wire(global, { lowerMs: now - 10 * M, upperMs: now + H }), now)?.focus).toBeNull();
    const state = defaultState(now);
    expect(decodeState(encodeState(state), now)).toEqual(state);
  });
});
