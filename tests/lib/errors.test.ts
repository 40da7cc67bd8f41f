import { describe, expect, test } from "bun:test";
import { AppError, errorDetail, errorMessage, toError } from "~/lib/errors.ts";

describe("what was thrown, as text", () => {
  test("errorMessage: an Error's message, anything else as a string", () => {
    expect(errorMessage(new Error("boom"))).toBe("boom");
    expect(errorMessage(new AppError("NOT_FOUND", "no such thing"))).toBe("no such thing");
    expect(errorMessage("plain")).toBe("plain");
    expect(errorMessage(42)).toBe("42");
    expect(errorMessage(undefined)).toBe("undefined");
    expect(errorMessage({ message: "not an Error" })).toBe("[object Object]");
  });

  test("errorDetail: the stack where there is one", () => {
    const err = new Error("boom");
    expect(errorDetail(err)).toBe(err.stack!);
    expect(errorDetail(err)).toContain("boom");
    const bare = new Error("no stack");
    bare.stack = undefined;
    expect(errorDetail(bare)).toBe("no stack");
    expect(errorDetail("plain")).toBe("plain");
  });

  test("toError: an Error as is, anything else wrapped with its text", () => {
    const err = new TypeError("t");
    expect(toError(err)).toBe(err);
    const wrapped = toError("oops");
    expect(wrapped).toBeInstanceOf(Error);
    expect(wrapped.message).toBe("oops");
    expect(toError(null).message).toBe("null");
  });
});
