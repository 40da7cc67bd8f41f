import { describe, expect, test } from "bun:test";
import { formatBytes, formatClock, formatDuration, pad } from "~/lib/format.ts";

describe("formatDuration (microseconds)", () => {
  test("µs, ms with a decimal under 100, whole ms, seconds with two decimals, then minutes", () => {
    expect(formatDuration(0)).toBe("0µs");
    expect(formatDuration(840)).toBe("840µs");
    expect(formatDuration(1000)).toBe("1.0ms");
    expect(formatDuration(12_400)).toBe("12.4ms");
    expect(formatDuration(250_000)).toBe("250ms");
    expect(formatDuration(1_520_000)).toBe("1.52s");
    expect(formatDuration(2_350_000)).toBe("2.35s");
    expect(formatDuration(125_000_000)).toBe("2m 05s");
  });

  test("a value that rounds up to the next unit is printed in that unit", () => {
    expect(formatDuration(999.7)).toBe("1.0ms");
    expect(formatDuration(99_960)).toBe("100ms");
    expect(formatDuration(999_600)).toBe("1.00s");
    expect(formatDuration(59_996_000)).toBe("1m 00s");
  });

  test("no duration: negative, NaN or infinite", () => {
    for (const us of [-1, Number.NaN, Number.POSITIVE_INFINITY]) expect(formatDuration(us)).toBe("—");
  });
});

describe("formatBytes", () => {
  test("steps of 1024", () => {
    expect(formatBytes(0)).toBe("0 B");
    expect(formatBytes(1023)).toBe("1023 B");
    expect(formatBytes(1024)).toBe("1.0 KB");
    expect(formatBytes(5 * 1024 * 1024)).toBe("5.0 MB");
    expect(formatBytes(1.25 * 1024 ** 3)).toBe("1.25 GB");
  });

  test("no size: negative, NaN or infinite", () => {
    for (const n of [-1, Number.NaN, Number.POSITIVE_INFINITY]) expect(formatBytes(n)).toBe("—");
  });
});

describe("formatClock", () => {
  test("local HH:MM:SS.mmm of a time in microseconds", () => {
    const d = new Date(2026, 0, 2, 3, 4, 5, 67);
    expect(formatClock(d.getTime() * 1000 + 999)).toBe("03:04:05.067");
  });

  test("pad", () => {
    expect(pad(7)).toBe("07");
    expect(pad(7, 3)).toBe("007");
    expect(pad(123)).toBe("123");
  });
});
