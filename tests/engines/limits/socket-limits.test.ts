import { expect, test } from "bun:test";
import { defaultMaxSockets, SocketLimits } from "~/engines/limits/socket-limits.ts";

test("sockets are counted per address, per link (link pings only) and in all; each cap says which it is", () => {
  const limits = new SocketLimits({ maxSockets: 5, perAddress: 2, pingsPerLink: 2 });
  const a1 = limits.admit("subscribe", "a");
  const a2 = limits.admit("publish", "a");
  expect(a1.ok && a2.ok).toBe(true);
  expect(limits.admit("tunnel", "a")).toEqual({ ok: false, reason: expect.stringContaining("from this address") });
  expect(limits.admit("linkPing", "b", "L").ok).toBe(true);
  expect(limits.admit("linkPing", "c", "L").ok).toBe(true);
  expect(limits.admit("linkPing", "d", "L")).toEqual({ ok: false, reason: expect.stringContaining("of this link") });
  // Live views of the same link are not link pings.
  expect(limits.admit("subscribe", "d", "L").ok).toBe(true);
  expect(limits.open).toBe(5);
  expect(limits.admit("worker", "e")).toEqual({ ok: false, reason: expect.stringContaining("too many open connections") });
  // A place given back (once, however often release is called) is free again.
  if (!a1.ok) throw new Error("a1");
  a1.slot.release();
  a1.slot.release();
  expect(limits.open).toBe(4);
  expect(limits.openFrom("a")).toBe(1);
  expect(limits.admit("tunnel", "a").ok).toBe(true);
});

test("the default cap: three quarters of the descriptor limit, and no more than the sockets' memory share at 16 KiB each", () => {
  expect(defaultMaxSockets(1024, 1024 ** 3)).toBe(768);
  expect(defaultMaxSockets(1_048_576, 64 * 1024 ** 2)).toBe(4096);
  expect(defaultMaxSockets(10, 0)).toBe(16);
});
