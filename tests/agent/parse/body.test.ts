import { describe, expect, test } from "bun:test";
import { BodySample } from "~/agent/parse/body.ts";

const filled = (n: number, byte: number) => new Uint8Array(n).fill(byte);

describe("body samples", () => {
  test("a body that arrives in one read is kept as a view of that read, not copied", () => {
    const read = filled(65536 + 120, 97);
    const sample = new BodySample(65536, 65536);
    sample.add(read, 120, read.length, true);
    expect(sample.bytes().buffer).toBe(read.buffer);
    expect(sample.bytes().length).toBe(65536);
    expect(sample.isTruncated).toBe(false);
  });

  test("a small body inside a large read is copied, so the read can be freed", () => {
    const read = filled(1 << 20, 98);
    const sample = new BodySample(65536, 10);
    sample.add(read, 500, 510, true);
    expect(sample.bytes().buffer).not.toBe(read.buffer);
    expect([...sample.bytes()]).toEqual(Array(10).fill(98));
  });

  test("a small body is copied into a buffer of its own length, even from a read it could view", () => {
    const read = filled(150, 97);
    const sample = new BodySample(65536, 2);
    sample.add(read, 148, 150, true);
    expect(sample.bytes().buffer).not.toBe(read.buffer);
    expect(sample.bytes().buffer.byteLength).toBe(2);
    expect([...sample.bytes()]).toEqual([97, 97]);
  });

  test("a buffer the caller may reuse is always copied", () => {
    const read = filled(100, 99);
    const sample = new BodySample(65536, 100);
    sample.add(read, 0, 100);
    read.fill(0);
    expect([...sample.bytes()]).toEqual(Array(100).fill(99));
  });

  test("a body over several reads is assembled in order, cut at the limit and marked truncated", () => {
    const sample = new BodySample(10_000, -1);
    sample.add(filled(4000, 1), 0, 4000, true);
    sample.add(filled(4000, 2), 0, 4000, true);
    sample.add(filled(4000, 3), 0, 4000, true);
    const kept = sample.bytes();
    expect(kept.length).toBe(10_000);
    expect([kept[0], kept[3999], kept[4000], kept[7999], kept[8000], kept[9999]]).toEqual([1, 1, 2, 2, 3, 3]);
    expect(sample.isTruncated).toBe(true);
  });
});
