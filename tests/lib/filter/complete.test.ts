import { describe, expect, test } from "bun:test";
import { completeFilter } from "~/lib/filter/complete.ts";
import { parseFilter } from "~/lib/filter/parse.ts";

const labels = (draft: string, known = {}) => completeFilter(draft, known).map((c) => c.label);
const take = (draft: string, label: string, known = {}) => completeFilter(draft, known).find((c) => c.label === label)?.text;

describe("filter autocomplete", () => {
  test("fields by prefix, then by a part of the name, each with what it is", () => {
    expect(labels("request.b")).toEqual(["request.body", "request.body_size", "request.body_truncated"]);
    expect(labels("encod")).toEqual([
      "request.content_encoding",
      "response.content_encoding",
      "request.transfer_encoding",
      "response.transfer_encoding",
    ]);
    expect(completeFilter("serv")[0]).toMatchObject({ label: "service", text: "service " });
    expect(take("tag", "tags")).toBe('tags["');
  });

  test("operators of the field typed, only those it takes", () => {
    expect(labels("request.body ")).toEqual(["contains", "icontains", "matches", "==", "!="]);
    expect(labels("response.status ")).toEqual(["==", "!=", "<", ">", "<=", ">="]);
    expect(labels('request.headers["x-request-id"] ')).toContain("exists");
    expect(labels("request.headers ")).not.toContain("exists");
    expect(take("request.body ic", "icontains")).toBe("request.body icontains ");
  });

  test("values: the field's own, usual methods and statuses, and values seen on screen, quoted as needed", () => {
    expect(labels('request.method == "P')).toEqual(["POST", "PUT", "PATCH"]);
    expect(take("response.status >= 5", "500")).toBe("response.status >= 500");
    expect(labels('tls == "')).toEqual(["decrypted", "not decrypted"]);
    expect(take('service == "ch', "checkout", { service: ["api", "checkout"] })).toBe('service == "checkout"');
    expect(labels('service == "', { service: ["api", "checkout"] })).toEqual(["api", "checkout"]);
  });

  test("header names in brackets", () => {
    expect(take('request.headers["x-req', "x-request-id")).toBe('request.headers["x-request-id"] ');
    expect(take('request.headers ["x-req', "x-request-id")).toBe('request.headers["x-request-id"] ');
  });

  test("only the condition being typed is completed; what came before is kept", () => {
    const text = take('request.method == "GET" && (response.st', "response.status");
    expect(text).toBe('request.method == "GET" && (response.status ');
    expect(take('request.url contains "a && b" || dur', "duration")).toBe('request.url contains "a && b" || duration ');
    // Each completion taken in turn gives a filter that parses.
    let draft = "resp";
    draft = take(draft, "response.body")!;
    draft = take(draft, "icontains")!;
    expect(parseFilter(`${draft}"E1042"`).ok).toBe(true);
  });

  test("nothing for an unknown field or a finished value", () => {
    expect(labels("nope.field ")).toEqual([]);
    expect(labels('request.method == "POST" ')).toEqual([]);
  });
});
