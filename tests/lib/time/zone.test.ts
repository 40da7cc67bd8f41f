import { describe, expect, test } from "bun:test";
import { formatFullTime, formatListTime, isSameDay, noonOfDay, offsetName, zoneName } from "~/lib/time/zone.ts";

// Times as the screens show them in the one display zone: the clock today, the date on other days, the zone named.
const NOW = Date.UTC(2026, 10, 27, 3, 0, 0);
const newYork = () => -300;
const us = (ms: number) => ms * 1000 + 417;

describe("display zone", () => {
  test("a list shows the clock today and the date on another day of the zone", () => {
    const t = Date.UTC(2026, 10, 27, 2, 20, 34, 123);
    expect(formatListTime(us(t), "UTC", NOW)).toBe("02:20:34.123");
    // The same moment in New York is 21:20 on the 26th, and New York's today (at NOW) is the 26th as well.
    expect(formatListTime(us(t), "Local", NOW, newYork)).toBe("21:20:34.123");
    expect(formatListTime(us(Date.UTC(2026, 10, 25, 2, 20, 34, 123)), "UTC", NOW)).toBe("Nov 25 02:20:34.123");
    expect(formatListTime(us(Date.UTC(2025, 0, 5, 2, 20, 34, 123)), "UTC", NOW)).toBe("Jan 5 2025 02:20:34.123");
  });

  test("the detail shows the date, the clock and the zone", () => {
    const t = Date.UTC(2026, 10, 27, 2, 20, 34, 123);
    expect(formatFullTime(us(t), "UTC")).toBe("2026-11-27 02:20:34.123 UTC");
    expect(formatFullTime(us(t), "Local", newYork)).toMatch(/^2026-11-26 21:20:34\.123 (EST|UTC-05:00)$/);
  });

  test("zone names: UTC, or an offset where the browser has no name", () => {
    expect(zoneName("UTC")).toBe("UTC");
    expect(offsetName(330)).toBe("UTC+05:30");
    expect(offsetName(-240)).toBe("UTC-04:00");
    expect(offsetName(0)).toBe("UTC");
  });

  test("today is per zone; noon of the day is one value for the whole day", () => {
    expect(isSameDay(Date.UTC(2026, 10, 27, 1), NOW, "UTC")).toBe(true);
    expect(isSameDay(Date.UTC(2026, 10, 27, 6), NOW, "Local", newYork)).toBe(false);
    expect(noonOfDay(Date.UTC(2026, 10, 27, 0, 1), "UTC")).toBe(noonOfDay(Date.UTC(2026, 10, 27, 23, 59), "UTC"));
    expect(noonOfDay(NOW, "Local", newYork)).toBe(Date.UTC(2026, 10, 26, 17));
  });
});
