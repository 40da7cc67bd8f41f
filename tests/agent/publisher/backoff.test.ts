import { describe, expect, test } from "bun:test";
import { Backoff } from "~/agent/publisher/backoff.ts";

describe("Backoff", () => {
  test("doubles from the minimum up to the maximum (no jitter at the middle of the range)", () => {
    const backoff = new Backoff(250, 10_000, () => 0.5);
    expect(Array.from({ length: 8 }, () => backoff.next())).toEqual([250, 500, 1000, 2000, 4000, 8000, 10_000, 10_000]);
  });

  test("jitter stays within ±25 % of the step", () => {
    const low = new Backoff(1000, 1000, () => 0);
    const high = new Backoff(1000, 1000, () => 0.999_999);
    expect(low.next()).toBe(750);
    expect(high.next()).toBe(1250);
    const random = new Backoff(400, 400);
    for (let i = 0; i < 200; i++) {
      const delay = random.next();
      expect(delay).toBeGreaterThanOrEqual(300);
      expect(delay).toBeLessThanOrEqual(500);
    }
  });

  test("reset starts again from the minimum", () => {
    const backoff = new Backoff(100, 1000, () => 0.5);
    backoff.next();
    backoff.next();
    backoff.next();
    backoff.reset();
    expect(backoff.next()).toBe(100);
    expect(backoff.next()).toBe(200);
  });
});
