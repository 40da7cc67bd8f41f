import { describe, expect, test } from "bun:test";
import { safeNext } from "~/services/auth/safe-next.ts";

describe("safeNext", () => {
  test("keeps same-origin paths with query and fragment", () => {
    for (const next of ["/dashboard", "/dashboard/my-ns/live", "/dashboard/a/requests?filter=eyJ9#x", "/login"]) {
      expect(safeNext(next)).toBe(next);
    }
  });

  test("refuses anything a browser could read as another origin", () => {
    const attacks = [
      "//evil.com",
      "///evil.com",
      "/\\evil.com",
      "\\\\evil.com",
      "/\\/evil.com",
      "https://evil.com",
      "http:evil.com",
      "javascript:alert(1)",
      "data:text/html,<script>",
      "evil.com",
      "/\t/evil.com",
      "/\n/evil.com",
      "/\r\n/evil.com",
      "/ /evil.com",
      "/\u0000",
      "",
      undefined,
      null,
      `/${"a".repeat(3000)}`,
    ];
    for (const next of attacks) expect(safeNext(next)).toBe("/dashboard");
  });

  test("normalises dot segments without leaving the origin", () => {
    expect(safeNext("/a/../b")).toBe("/b");
    expect(safeNext("/../../evil.com")).toBe("/evil.com");
  });
});
