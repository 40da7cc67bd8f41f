import { describe, expect, test } from "bun:test";
import { displayUrl, eventUrl, listUrl, splitUrlTail } from "~/lib/event-url.ts";

/** How an event's URL reads in lists, the detail view, cURL and HAR exports. */
describe("event URLs", () => {
  const call = { http_is_outgoing: true, protocol: "http", http_req_host: "api.test:8443", http_req_path: "/v1/items?x=1" } as const;

  test("an outbound call: the full URL, https only when decrypted; a request the program served: its path", () => {
    expect(displayUrl(call)).toBe("http://api.test:8443/v1/items?x=1");
    expect(eventUrl({ ...call, tags: { tls: "decrypted" } })).toBe("https://api.test:8443/v1/items?x=1");
    expect(displayUrl({ ...call, http_is_outgoing: false })).toBe("/v1/items?x=1");
  });

  test("the live list reads both directions the same way: host and path; the server address when no host was sent", () => {
    expect(listUrl(call)).toBe("api.test:8443/v1/items?x=1");
    expect(listUrl({ ...call, http_is_outgoing: false, http_req_host: "localhost:3000" })).toBe("localhost:3000/v1/items?x=1");
    expect(listUrl({ ...call, http_req_host: "", http_server_addr: "10.0.0.2:80", http_req_path: "" })).toBe("10.0.0.2:80/");
    expect(listUrl({ ...call, protocol: "db", db_statement: "SELECT 1" })).toBe("SELECT 1");
  });

  test("a CONNECT names its authority once (its target and its Host header say the same)", () => {
    const connect = { ...call, http_req_method: "CONNECT", http_req_host: "api.test:443", http_req_path: "api.test:443" };
    expect(displayUrl(connect)).toBe("api.test:443");
    expect(eventUrl(connect)).toBe("http://api.test:443");
  });
});

describe("splitUrlTail", () => {
  test("the last path segment and the query stay whole; the host and the first segments go first", () => {
    expect(splitUrlTail("http://inventory.internal.example.com:8443/v1/items")).toEqual({
      head: "http://inventory.internal.example.com:8443/v1",
      tail: "/items",
    });
    expect(splitUrlTail("http://inventory.internal.example.com:8443/v1/slow?delay=250")).toEqual({
      head: "http://inventory.internal.example.com:8443/v1",
      tail: "/slow?delay=250",
    });
    // A slash in the query is not the path's.
    expect(splitUrlTail("http://h/a/b?next=/c/d").tail).toBe("/b?next=/c/d");
  });

  test("a long tail keeps only its end; a URL without a path has no tail; the parts always join to the URL", () => {
    const long = `http://h/${"x".repeat(60)}`;
    const { head, tail } = splitUrlTail(long, 20);
    expect(tail).toBe("x".repeat(20));
    expect(head + tail).toBe(long);
    expect(splitUrlTail("http://h")).toEqual({ head: "http://h", tail: "" });
    expect(splitUrlTail("payments.example.com:443 (tcp)")).toEqual({ head: "payments.example.com:443 (tcp)", tail: "" });
    expect(splitUrlTail("http://h/")).toEqual({ head: "http://h", tail: "/" });
  });
});
