import { describe, expect, test } from "bun:test";
import { chooseBucketMs } from "~/lib/time/buckets.ts";
import {
  centredOn,
  endingAt,
  gridRange,
  isValidFocus,
  moveLeftHandle,
  moveRightHandle,
  newInterval,
  panFocus,
  shiftGlobal,
  snapToBucket,
  zoomToFocus,
} from "~/lib/time/range.ts";
import { chooseTickStep, tickLabel, ticks } from "~/lib/time/ticks.ts";
import { formatUtc, parseTypedUtc, typedTimePlaceholder } from "~/lib/time/typed-time.ts";

const S = 1000;
const M = 60 * S;
const H = 60 * M;
const t0 = Date.UTC(2026, 10, 21, 10, 0, 0);

describe("bucket choice", () => {
  test("the smallest size whose 120 buckets cover the span", () => {
    expect(chooseBucketMs(t0, t0 + 2 * M)).toBe(1 * S);
    expect(chooseBucketMs(t0, t0 + 2 * M + 1)).toBe(5 * S);
    expect(chooseBucketMs(t0, t0 + 10 * M)).toBe(5 * S);
    expect(chooseBucketMs(t0, t0 + 1 * H)).toBe(30 * S);
    expect(chooseBucketMs(t0, t0 + 2 * H)).toBe(1 * M);
    expect(chooseBucketMs(t0, t0 + 10 * H)).toBe(5 * M);
    expect(chooseBucketMs(t0, t0 + 20 * H)).toBe(10 * M);
  });
  test("only the span counts: an unaligned start keeps the spec's size (the 1h preset ending now: 30 s)", () => {
    expect(chooseBucketMs(t0 + 500, t0 + 500 + 2 * M)).toBe(1 * S);
    const oneHour = endingAt(H, t0 + 7_250);
    expect(chooseBucketMs(oneHour.startMs, oneHour.endMs)).toBe(30 * S);
  });
});

describe("snapping and bounds", () => {
  const global = { startMs: t0, endMs: t0 + H }; // 30 s buckets
  const focus = { startMs: t0 + 10 * M, endMs: t0 + 20 * M };
  test("times snap to the nearest bucket boundary", () => {
    expect(snapToBucket(global, t0 + 14_000)).toBe(t0);
    expect(snapToBucket(global, t0 + 16_000)).toBe(t0 + 30_000);
    expect(snapToBucket(global, t0 - H)).toBe(t0);
    expect(snapToBucket(global, t0 + 5 * H)).toBe(gridRange(global).endMs);
  });
  test("left handle stays between the global start and the focus end", () => {
    expect(moveLeftHandle(global, focus, t0 + 5 * M + 3000)).toEqual({
      startMs: t0 + 5 * M,
      endMs: focus.endMs,
    });
    expect(moveLeftHandle(global, focus, t0 - 10 * M).startMs).toBe(t0);
    const past = moveLeftHandle(global, focus, t0 + 50 * M);
    expect(past.startMs).toBe(focus.endMs - 30 * S);
    expect(past.endMs - past.startMs).toBeGreaterThanOrEqual(0.001);
  });
  test("right handle stays between the focus start and the global end", () => {
    expect(moveRightHandle(global, focus, t0 + 30 * M + 1000).endMs).toBe(t0 + 30 * M);
    expect(moveRightHandle(global, focus, t0 + 9 * H).endMs).toBe(t0 + H);
    expect(moveRightHandle(global, focus, t0).endMs).toBe(focus.startMs + 30 * S);
  });
  test("pan keeps the width, moves whole buckets, stays inside", () => {
    expect(panFocus(global, focus, 61_000)).toEqual({
      startMs: focus.startMs + 60_000,
      endMs: focus.endMs + 60_000,
    });
    expect(panFocus(global, focus, -H)).toEqual({
      startMs: t0,
      endMs: t0 + 10 * M,
    });
    expect(panFocus(global, focus, H)).toEqual({
      startMs: t0 + 50 * M,
      endMs: t0 + H,
    });
  });
  test("a new interval snaps outward, either direction, at least one bucket", () => {
    expect(newInterval(global, t0 + 20 * M + 5000, t0 + 10 * M + 5000)).toEqual({ startMs: t0 + 10 * M, endMs: t0 + 20 * M + 30_000 });
    expect(newInterval(global, t0 + 90_000, t0 + 90_000)).toEqual({
      startMs: t0 + 90_000,
      endMs: t0 + 120_000,
    });
  });
  test("valid focus: integer ms, inside, non-empty", () => {
    expect(isValidFocus(global, focus)).toBe(true);
    expect(isValidFocus(global, { startMs: t0 + 1.5, endMs: t0 + 10 })).toBe(false);
    expect(isValidFocus(global, { startMs: t0 + 10, endMs: t0 + 10 })).toBe(false);
    expect(isValidFocus(global, { startMs: t0 - 1000, endMs: t0 + 10 })).toBe(false);
  });
});

describe("shift, zoom, presets, jump", () => {
  test("shift moves the global range by 30 buckets (a quarter)", () => {
    expect(shiftGlobal({ startMs: t0, endMs: t0 + H }, -1)).toEqual({
      startMs: t0 - 15 * M,
      endMs: t0 + 45 * M,
    });
    expect(shiftGlobal({ startMs: t0, endMs: t0 + 10 * H }, 1)).toEqual({
      startMs: t0 + 150 * M,
      endMs: t0 + 10 * H + 150 * M,
    });
  });
  test("zoom re-buckets the global range to the focus", () => {
    const z = zoomToFocus({ startMs: t0 + 10 * M, endMs: t0 + 12 * M });
    expect(z).toEqual({ startMs: t0 + 10 * M, endMs: t0 + 12 * M });
    expect(chooseBucketMs(z.startMs, z.endMs)).toBe(S);
  });
  test("presets end now (next whole second); jump keeps the duration around the time", () => {
    expect(endingAt(H, t0 + 1234)).toEqual({
      startMs: t0 + 2000 - H,
      endMs: t0 + 2000,
    });
    expect(centredOn({ startMs: 0, endMs: H }, t0)).toEqual({
      startMs: t0 - 30 * M,
      endMs: t0 + 30 * M,
    });
  });
});

describe("typed time round trip", () => {
  test("exact text round-trips", () => {
    expect(parseTypedUtc("2026-11-14 12:34:56")).toBe(Date.UTC(2026, 10, 14, 12, 34, 56));
    expect(formatUtc(Date.UTC(2026, 0, 2, 3, 4, 5))).toBe("2026-01-02 03:04:05");
  });
  test("anything else is refused", () => {
    for (const bad of [
      "2026-02-30 10:00:00",
      "2026-1-02 03:04:05",
      "2026-01-02T03:04:05",
      "2026-01-02 24:00:00",
      "2026-01-02 03:04:05 ",
      "",
      "2026-01-02 03:04",
    ]) {
      expect(parseTypedUtc(bad)).toBeNull();
    }
  });
  test("placeholder: a date a week ago plus 12:34:56", () => {
    expect(typedTimePlaceholder(Date.UTC(2026, 10, 21, 1, 0, 0))).toBe("2026-11-14 12:34:56");
    expect(parseTypedUtc(typedTimePlaceholder(Date.now()))).not.toBeNull();
  });
});

describe("axis ticks", () => {
  test("about 12 labels from the listed steps", () => {
    expect(chooseTickStep(2 * M)).toBe(15 * S);
    expect(chooseTickStep(10 * M)).toBe(1 * M);
    expect(chooseTickStep(H)).toBe(5 * M);
    expect(chooseTickStep(2 * H)).toBe(15 * M);
    expect(chooseTickStep(10 * H)).toBe(60 * M);
    expect(chooseTickStep(20 * H)).toBe(3 * H);
    expect(chooseTickStep(7 * 24 * H)).toBe(24 * H);
    for (const span of [M, 2 * M, 10 * M, H, 2 * H, 10 * H, 20 * H, 3 * 24 * H]) {
      const n = ticks(t0, t0 + span, "UTC").length;
      expect(n).toBeGreaterThanOrEqual(3);
      expect(n).toBeLessThanOrEqual(13);
    }
  });
  test("ticks align to the step in the zone shown", () => {
    const ts = ticks(t0 + 7 * M, t0 + 20 * H, "UTC");
    expect(ts[0]).toBe(Date.UTC(2026, 10, 21, 12));
    expect(ts.every((t) => t % (3 * H) === 0)).toBe(true);
    // A +05:30 zone puts 3 h ticks on its own 00/03/…: 06:30 UTC is 12:00 there.
    const india = ticks(t0, t0 + 20 * H, "Local", () => 330);
    expect(india.every((t) => (t + 330 * M) % (3 * H) === 0)).toBe(true);
  });
  test("labels show seconds, minutes or dates by step", () => {
    expect(tickLabel(t0 + 15 * S, 15 * S, "UTC")).toBe("10:00:15");
    expect(tickLabel(t0 + 5 * M, 5 * M, "UTC")).toBe("10:05");
    expect(tickLabel(Date.UTC(2026, 10, 22), 3 * H, "UTC")).toBe("11-22");
    expect(tickLabel(Date.UTC(2026, 10, 22), 24 * H, "UTC")).toBe("2026-11-22");
  });
});
