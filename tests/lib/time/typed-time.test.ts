import { describe, expect, test } from "bun:test";
import { centredOn } from "~/lib/time/range.ts";
import { formatInZone, parseJumpTime } from "~/lib/time/typed-time.ts";

// The jump-to-time box as a person types into it: ISO 8601 with or without a zone, a bare time of today, and a
// reason in words for anything else.
const NOW = Date.UTC(2026, 10, 27, 15, 30, 0);
const newYork = (t: number) => (t >= Date.UTC(2026, 10, 1, 6) ? -300 : -240); // EST from 1 November 2026, EDT before
const ms = (text: string, zone: "UTC" | "Local" = "UTC", offset = newYork) => {
  const parsed = parseJumpTime(text, zone, NOW, offset);
  if (!parsed.ok) throw new Error(parsed.reason);
  return parsed.ms;
};
const reason = (text: string, zone: "UTC" | "Local" = "UTC") => {
  const parsed = parseJumpTime(text, zone, NOW, newYork);
  if (parsed.ok) throw new Error(`${text} parsed`);
  return parsed.reason;
};

describe("jump to time", () => {
  test("ISO 8601 with Z, with an offset, or with neither (read in the display zone)", () => {
    expect(ms("2026-11-27T06:55:00Z")).toBe(Date.UTC(2026, 10, 27, 6, 55));
    expect(ms("2026-11-27T06:55:00z", "Local")).toBe(Date.UTC(2026, 10, 27, 6, 55));
    expect(ms("2026-11-27T06:55:00")).toBe(Date.UTC(2026, 10, 27, 6, 55));
    expect(ms("2026-11-27T06:55:00", "Local")).toBe(Date.UTC(2026, 10, 27, 11, 55));
    expect(ms("2026-10-27T06:55:00", "Local")).toBe(Date.UTC(2026, 9, 27, 10, 55));
    expect(ms("2026-11-27T06:55:00+02:00", "Local")).toBe(Date.UTC(2026, 10, 27, 4, 55));
    expect(ms("2026-11-27T06:55:00-0530")).toBe(Date.UTC(2026, 10, 27, 12, 25));
    expect(ms("2026-11-27 06:55")).toBe(Date.UTC(2026, 10, 27, 6, 55));
    expect(ms("2026-11-27T06:55:00.250Z")).toBe(Date.UTC(2026, 10, 27, 6, 55, 0, 250));
    expect(ms("2026-11-27")).toBe(Date.UTC(2026, 10, 27));
    expect(ms("  2026-11-27T06:55:00Z ")).toBe(Date.UTC(2026, 10, 27, 6, 55));
  });

  test("a bare time is today in the display zone", () => {
    expect(ms("06:55")).toBe(Date.UTC(2026, 10, 27, 6, 55));
    expect(ms("6:55:30")).toBe(Date.UTC(2026, 10, 27, 6, 55, 30));
    // 15:30 UTC is 10:30 in New York: its today is the 27th too, and 06:55 there is 11:55 UTC.
    expect(ms("06:55", "Local")).toBe(Date.UTC(2026, 10, 27, 11, 55));
    expect(ms("06:55Z", "Local")).toBe(Date.UTC(2026, 10, 27, 6, 55));
  });

  test("anything else says why, in words", () => {
    expect(reason("2026-02-30T10:00:00")).toBe("2026-02-30 is not a date.");
    expect(reason("2026-13-01")).toBe("2026-13-01 is not a date.");
    expect(reason("2026-01-02T24:00:00")).toBe("24:00:00 is not a time of day (00:00:00 to 23:59:59).");
    expect(reason("25:00")).toBe("25:00 is not a time of day (00:00:00 to 23:59:59).");
    expect(reason("yesterday")).toStartWith('"yesterday" is not a time. Type an ISO 8601 time');
    expect(reason("2026-11-27T06:55:00+25:00")).toBe('"+25:00" is not a time zone offset (use Z, or one like +02:00).');
    expect(reason("")).toStartWith("Type an ISO 8601 time");
    expect(reason("1".repeat(5000))).toStartWith("That is not a time.");
  });

  test("a jumped range starts and ends on whole seconds (no stray .500)", () => {
    const sevenSeconds = { startMs: 0, endMs: 7000 };
    const jumped = centredOn(sevenSeconds, Date.UTC(2026, 10, 27, 6, 55));
    expect(jumped.endMs - jumped.startMs).toBe(7000);
    expect(jumped.startMs % 1000).toBe(0);
    expect(formatInZone(jumped.startMs, "UTC")).toBe("2026-11-27 06:54:57 UTC");
    // Below two seconds the range keeps its milliseconds.
    expect(centredOn({ startMs: 0, endMs: 10 }, 1005)).toEqual({ startMs: 1000, endMs: 1010 });
  });
});
