import { describe, expect, test } from "bun:test";
import { HpackDecoder, HpackError } from "~/agent/parse/hpack.ts";
import { h2 } from "./helpers.ts";

const hex = (s: string) => Buffer.from(s.replace(/\s+/g, ""), "hex");

describe("HPACK decoding (RFC 7541 Appendix C examples)", () => {
  test("C.4: requests with Huffman coding, the dynamic table carried across blocks", () => {
    const d = new HpackDecoder();
    expect(d.decode(hex("8286 8441 8cf1 e3c2 e5f2 3a6b a0ab 90f4 ff"))).toEqual([
      [":method", "GET"],
      [":scheme", "http"],
      [":path", "/"],
      [":authority", "www.example.com"],
    ]);
    expect(d.decode(hex("8286 84be 5886 a8eb 1064 9cbf"))).toEqual([
      [":method", "GET"],
      [":scheme", "http"],
      [":path", "/"],
      [":authority", "www.example.com"],
      ["cache-control", "no-cache"],
    ]);
    expect(d.decode(hex("8287 85bf 4088 25a8 49e9 5ba9 7d7f 8925 a849 e95b b8e8 b4bf"))).toEqual([
      [":method", "GET"],
      [":scheme", "https"],
      [":path", "/index.html"],
      [":authority", "www.example.com"],
      ["custom-key", "custom-value"],
    ]);
  });

  test("C.3: the same requests without Huffman coding", () => {
    const d = new HpackDecoder();
    expect(d.decode(hex("8286 8441 0f77 7777 2e65 7861 6d70 6c65 2e63 6f6d"))).toContainEqual([":authority", "www.example.com"]);
    expect(d.decode(hex("8286 84be 5808 6e6f 2d63 6163 6865"))).toContainEqual(["cache-control", "no-cache"]);
  });

  test("malformed blocks are errors, never crashes", () => {
    const d = new HpackDecoder();
    expect(() => d.decode(hex("be"))).toThrow(HpackError);
    expect(() => d.decode(hex("41 8c f1e3"))).toThrow(HpackError);
    expect(() => d.decode(hex("41 81 ff"))).toThrow(HpackError);
    expect(() => d.decode(hex("ff ff ff ff ff ff"))).toThrow(HpackError);
  });

  test("a block that decodes past 64 KiB or 1024 fields is an error: a reference costs a byte, its entry is counted whole", () => {
    const d = new HpackDecoder();
    const value = "v".repeat(20_000);
    expect(() =>
      d.decode(h2.block(h2.sizeUpdate(64 * 1024), h2.indexing("x", value), h2.indexed(62), h2.indexed(62), h2.indexed(62))),
    ).toThrow("header list over 64 KiB decoded");
    expect(() => new HpackDecoder().decode(h2.block(...Array(1025).fill(h2.indexed(2))))).toThrow("header list over 1024 fields");
    expect(new HpackDecoder().decode(h2.block(...Array(1024).fill(h2.indexed(2))))).toHaveLength(1024);
  });

  test("the dynamic table follows thousands of additions and evictions: references name the right entries", () => {
    const d = new HpackDecoder();
    d.decode(h2.block(h2.sizeUpdate(64 * 1024)));
    for (let i = 0; i < 5000; i++) d.decode(h2.block(h2.indexing(`k${i}`, "value")));
    // Each entry costs 32 + 5 + its name: about 1,600 fit in 64 KiB.
    expect(d.decode(h2.block(h2.indexed(62), h2.indexed(63), h2.indexed(61 + 1500)))).toEqual([
      ["k4999", "value"],
      ["k4998", "value"],
      ["k3500", "value"],
    ]);
    expect(() => d.decode(h2.block(h2.indexed(61 + 1700)))).toThrow(HpackError);
  });
});
