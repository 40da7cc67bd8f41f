import { describe, expect, test } from "bun:test";
import { displayUrl, eventUrl } from "~/lib/event-url.ts";

/** How an event's URL reads in lists, the detail view, cURL and HAR exports. */
describe("event URLs", () => {
  const call = { http_is_outgoing: true, protocol: "http", http_req_host: "api.test:8443", http_req_path: "/v1/items?x=1" } as const;

  test("an outbound call: the full URL, https only when decrypted; a request the program served: its path", () => {
    expect(displayUrl(call)).toBe("http://api.test:8443/v1/items?x=1");
    expect(eventUrl({ ...call, tags: { tls: "decrypted" } })).toBe("https://api.test:8443/v1/items?x=1");
    expect(displayUrl({ ...call, http_is_outgoing: false })).toBe("/v1/items?x=1");
  });

  test("a CONNECT names its authority once (its target and its Host header say the same)", () => {
    const connect = { ...call, http_req_method: "CONNECT", http_req_host: "api.test:443", http_req_path: "api.test:443" };
    expect(displayUrl(connect)).toBe("api.test:443");
    expect(eventUrl(connect)).toBe("http://api.test:443");
  });
});
