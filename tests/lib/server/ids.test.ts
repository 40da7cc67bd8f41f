import { describe, expect, test } from "bun:test";
import { isUuid, uuidSource } from "~/lib/server/ids.ts";

describe("isUuid", () => {
  test("a UUID of any version, in either case", () => {
    expect(isUuid("0f8fad5b-d9cb-469f-a165-70867728950e")).toBe(true);
    expect(isUuid("0F8FAD5B-D9CB-469F-A165-70867728950E")).toBe(true);
    expect(isUuid(crypto.randomUUID())).toBe(true);
  });

  test("anything else, including non-strings and UUIDs with extra text around them", () => {
    for (const value of [
      "",
      "0f8fad5b-d9cb-469f-a165-70867728950",
      "0f8fad5bd9cb469fa16570867728950e",
      " 0f8fad5b-d9cb-469f-a165-70867728950e",
      "0f8fad5b-d9cb-469f-a165-70867728950e\n",
      "g f8fad5b-d9cb-469f-a165-70867728950e",
    ]) {
      expect(isUuid(value)).toBe(false);
    }
    for (const value of [null, undefined, 42, {}, ["0f8fad5b-d9cb-469f-a165-70867728950e"]]) expect(isUuid(value)).toBe(false);
  });

  test("uuidSource embeds in a larger pattern", () => {
    const pattern = new RegExp(`^user:(${uuidSource})$`, "i");
    expect(pattern.exec("user:0f8fad5b-d9cb-469f-a165-70867728950e")?.[1]).toBe("0f8fad5b-d9cb-469f-a165-70867728950e");
    expect(pattern.test("user:nope")).toBe(false);
  });
});
