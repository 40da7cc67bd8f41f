import { describe, expect, test } from "bun:test";
import {
  compress,
  decodeRequest,
  decodeResult,
  decodeResultData,
  decompress,
  encodeRequest,
  encodeResult,
  encodeResultData,
  errorResult,
  FrameJoiner,
  relabelResult,
  splitFrame,
  TunnelProtocolError,
  type TunnelResultData,
} from "~/lib/protocol/tunnel.ts";

const data: TunnelResultData = {
  meta: ["time", "event_id"],
  data: [{ time: 1, event_id: "e" }],
  rows_before_limit_at_least: 1,
  wasRowLimitExceeded: false,
  actualNumberOfRows: 1,
  durationInNanoseconds: 5,
};

describe("tunnel frames", () => {
  test("requests and results round-trip, with either compression", async () => {
    for (const mode of ["none", "gzip"] as const) {
      const want = {
        kind: "rows" as const,
        query: { filter: { clauses: [], global: { lowerMs: Date.UTC(2026, 0, 1), upperMs: Date.UTC(2026, 0, 2) } } },
        filterText: "duration > 5ms",
      };
      const req = await decodeRequest(await encodeRequest({ queryId: "q-1", tags: { namespaceId: "n" }, compression: mode, want }, mode));
      expect(req).toEqual({ queryId: "q-1", tags: { namespaceId: "n" }, compression: mode, want });
      const frame = encodeResult({
        queryId: "q-1",
        tunnelError: null,
        databaseQueryId: "d",
        databaseError: null,
        compression: mode,
        data: await encodeResultData(mode, data),
      });
      const result = decodeResult(frame);
      expect(result.databaseQueryId).toBe("d");
      expect(await decodeResultData(result)).toEqual(data);
      expect(decodeResult(relabelResult(frame, "other")).queryId).toBe("other");
    }
  });

  test("a gzip bomb is cut at the limit; corrupt gzip is a protocol error", async () => {
    const bomb = await compress("gzip", new Uint8Array(8 * 1024 * 1024));
    expect(bomb.length).toBeLessThan(64 * 1024);
    await expect(decompress("gzip", bomb, 1024 * 1024)).rejects.toThrow("tunnel data too large");
    await expect(decompress("gzip", new Uint8Array([0x1f, 0x8b, 8, 0, 1, 2, 3]))).rejects.toThrow(TunnelProtocolError);
    await expect(decompress("zstd", new Uint8Array())).rejects.toThrow('unknown compression mode "zstd"');
  });

  test("random and truncated bytes only ever raise protocol errors", async () => {
    const good = await encodeRequest({ queryId: "q", tags: {}, compression: "none", want: { kind: "event", eventId: "x" } });
    for (let cut = 0; cut < good.length; cut++) {
      await expect(decodeRequest(good.subarray(0, cut))).rejects.toThrow(TunnelProtocolError);
    }
    let seed = 7;
    const rand = () => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed;
    };
    for (let i = 0; i < 2000; i++) {
      const bytes = new Uint8Array(rand() % 64);
      for (let j = 0; j < bytes.length; j++) bytes[j] = rand() & 0xff;
      if (i % 2 === 0 && bytes.length >= 4) bytes.set([0x54, 0x53, 1, 1]);
      try {
        await decodeRequest(bytes);
      } catch (err) {
        expect(err).toBeInstanceOf(TunnelProtocolError);
      }
    }
  });
});

describe("split results (a worker's result bigger than a frame)", () => {
  const bytes = new Uint8Array(10 * 1024 + 7).map((_, i) => i % 251);

  test("a result that fits is one frame; a bigger one is parts of at most partBytes plus a header, joined back whole", () => {
    expect(splitFrame(bytes, bytes.length, "s")).toEqual([bytes]);
    const parts = splitFrame(bytes, 1024, "s");
    expect(parts).toHaveLength(11);
    for (const part of parts) expect(part.length).toBeLessThan(1024 + 128);
    const joiner = new FrameJoiner(1024 * 1024);
    const out = parts.map((p) => joiner.push(p));
    expect(out.slice(0, -1).every((o) => o === null)).toBe(true);
    expect(out.at(-1)).toEqual(bytes);
    // Any other frame passes through untouched.
    const whole = encodeResult(errorResult("q", { tunnelError: "x" }));
    expect(joiner.push(whole)).toBe(whole);
  });

  test("a stream over the joiner's bound, or parts out of order, are refused and the next stream still joins", () => {
    const joiner = new FrameJoiner(4096);
    expect(() => joiner.push(splitFrame(bytes, 1024, "big")[0]!)).toThrow(TunnelProtocolError);
    const parts = splitFrame(bytes.subarray(0, 3000), 1024, "a");
    joiner.push(parts[0]!);
    expect(() => joiner.push(parts[2]!)).toThrow("out of order");
    expect(parts.map((p) => joiner.push(p)).at(-1)).toEqual(bytes.subarray(0, 3000));
  });
});
