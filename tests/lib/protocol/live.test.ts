import { describe, expect, test } from "bun:test";
import { liveSocketUrl, parseLiveClientMessage } from "~/lib/protocol/live.ts";

describe("live protocol", () => {
  test("liveSocketUrl: a subscriber URL as is, a link URL to its socket on the same origin", () => {
    expect(liveSocketUrl("wss://tapscope.dev/api/LiveSubscribe?ticket=abc")).toBe("wss://tapscope.dev/api/LiveSubscribe?ticket=abc");
    expect(liveSocketUrl("https://tapscope.dev/link/AbC_-12345678?expiry=2026-01-01T00%3A00%3A00.000Z")).toBe(
      "wss://tapscope.dev/api/LiveSubscribe?link_id=AbC_-12345678",
    );
    expect(liveSocketUrl("http://localhost:4000/link/xyz12345")).toBe("ws://localhost:4000/api/LiveSubscribe?link_id=xyz12345");
    for (const bad of ["javascript:alert(1)", "not a url", "https://x.dev/dashboard", "wss://x.dev/api/Other", "https://x.dev/link/a/b"]) {
      expect(liveSocketUrl(bad)).toBeNull();
    }
  });

  test("parseLiveClientMessage accepts a well-formed setConfig only", () => {
    expect(parseLiveClientMessage({ type: "setConfig", revision: 2, filters: ["a"] })).toEqual({
      type: "setConfig",
      revision: 2,
      filters: ["a"],
    });
    expect(parseLiveClientMessage('{"type":"setConfig","revision":0,"filters":[]}')).toEqual({
      type: "setConfig",
      revision: 0,
      filters: [],
    });
    const bad: unknown[] = [
      "ping",
      "{",
      null,
      42,
      { type: "other" },
      { type: "setConfig", revision: -1, filters: [] },
      { type: "setConfig", revision: 1.5, filters: [] },
      { type: "setConfig", revision: 1, filters: "x" },
      { type: "setConfig", revision: 1, filters: [1] },
      { type: "setConfig", revision: 1, filters: Array.from({ length: 33 }, () => "x") },
      { type: "setConfig", revision: 1, filters: ["x".repeat(5000)] },
    ];
    for (const value of bad) expect(parseLiveClientMessage(value)).toBeNull();
  });
});
