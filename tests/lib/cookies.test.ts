import { describe, expect, test } from "bun:test";
import { parseCookies } from "~/lib/cookies.ts";

describe("parseCookies", () => {
  test("name=value pairs, trimmed, %-decoded, quotes dropped", () => {
    expect(parseCookies('a=1; b = two%20words ;c="quoted"')).toEqual({ a: "1", b: "two words", c: "quoted" });
  });

  test("no header, an empty one, or pairs without a name or '=' give nothing", () => {
    expect(parseCookies(null)).toEqual({});
    expect(parseCookies(undefined)).toEqual({});
    expect(parseCookies("")).toEqual({});
    expect(parseCookies("novalue; =anon; ;")).toEqual({});
  });

  test("bad %-encoding keeps the raw value and never throws", () => {
    expect(parseCookies("s=abc%; t=%E0%A4%A; u=ok%21")).toEqual({ s: "abc%", t: "%E0%A4%A", u: "ok!" });
  });

  test("the first of two same-named cookies wins", () => {
    expect(parseCookies("s=first; s=second")).toEqual({ s: "first" });
  });

  test("names such as __proto__ or constructor are plain cookies", () => {
    const jar = parseCookies("__proto__=x; constructor=y");
    expect(jar["__proto__"]).toBe("x");
    expect(jar["constructor"]).toBe("y");
    expect(Object.getPrototypeOf(jar)).toBeNull();
  });

  test("a value may hold '='", () => {
    expect(parseCookies("t=a=b==")).toEqual({ t: "a=b==" });
  });
});
