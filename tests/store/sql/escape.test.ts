import { describe, expect, test } from "bun:test";
import { clickhouseLiteral, duckdbLiteral } from "~/store/sql/escape.ts";

describe("SQL literals", () => {
  test("ClickHouse escapes quote, backslash and control characters; keeps unicode", () => {
    expect(clickhouseLiteral("it's")).toBe("'it\\x27s'");
    expect(clickhouseLiteral("a\\b")).toBe("'a\\x5cb'");
    expect(clickhouseLiteral("a\0b\n")).toBe("'a\\x00b\\x0a'");
    expect(clickhouseLiteral("日本😀")).toBe("'日本😀'");
    expect(clickhouseLiteral(new Uint8Array([0xff, 0x41, 0x27]))).toBe("'\\xffA\\x27'");
  });

  test("DuckDB doubles quotes and splices NUL with chr(0)", () => {
    expect(duckdbLiteral("it's")).toBe("'it''s'");
    expect(duckdbLiteral("a\\b")).toBe("'a\\b'");
    expect(duckdbLiteral("a\0b")).toBe("('a' || chr(0) || 'b')");
    expect(duckdbLiteral(new Uint8Array([0xff, 0]))).toBe("'\\xff\\x00'::BLOB");
  });

  test("numbers must be finite; negatives are parenthesised", () => {
    for (const lit of [clickhouseLiteral, duckdbLiteral]) {
      expect(lit(42)).toBe("42");
      expect(lit(-1)).toBe("(-1)");
      expect(() => lit(Number.NaN)).toThrow();
      expect(() => lit(Number.POSITIVE_INFINITY)).toThrow();
    }
  });

  test("lone surrogates (not text) become U+FFFD instead of breaking the statement", () => {
    expect(clickhouseLiteral("a\ud800b")).toBe("'a\ufffdb'");
    expect(duckdbLiteral("a\udc00")).toBe("'a\ufffd'");
  });
});
