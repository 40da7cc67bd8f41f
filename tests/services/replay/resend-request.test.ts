import { describe, expect, test } from "bun:test";
import { AppError } from "~/lib/errors.ts";
import { checkedEdit, replayTarget } from "~/services/replay/resend-request.ts";
import { tracedEvent } from "../../support/event-factory.ts";

const refusal = (f: () => unknown): string => {
  try {
    f();
  } catch (err) {
    expect(err).toBeInstanceOf(AppError);
    return (err as AppError).message;
  }
  throw new Error("not refused");
};

describe("what an edit may change", () => {
  test("method, path and headers pass; framing headers are the run's", () => {
    expect(
      checkedEdit({
        method: "post",
        path: "/a?b=1",
        headers: [
          ["X-Edit", "1"],
          ["Content-Length", "99"],
          ["Connection", "close"],
        ],
        body: "aGk=",
      }),
    ).toEqual({ method: "POST", path: "/a?b=1", headers: [["X-Edit", "1"]] });
  });

  test("another host, a changed Host header, a split header or request line: refused, saying why", () => {
    const base = { method: "GET", path: "/", headers: [] as Array<[string, string]>, body: "" };
    expect(refusal(() => checkedEdit({ ...base, path: "https://evil.example/" }))).toMatch(/never another/);
    expect(refusal(() => checkedEdit({ ...base, path: "//evil.example/x y" }))).toMatch(/spaces or control/);
    expect(refusal(() => checkedEdit({ ...base, headers: [["host", "evil.example"]] }))).toMatch(/Host header/);
    expect(refusal(() => checkedEdit({ ...base, headers: [["x", "a\r\nHost: evil"]] }))).toMatch(/control characters/);
    expect(refusal(() => checkedEdit({ ...base, headers: [["bad name", "a"]] }))).toMatch(/not a header name/);
    expect(refusal(() => checkedEdit({ ...base, method: "GET /x HTTP/1.1" }))).toMatch(/not an HTTP method/);
    expect(refusal(() => checkedEdit({ ...base, body: "not base64!" }))).toMatch(/base64/);
  });
});

describe("where a replay goes: the original's own fields", () => {
  test("inbound: the program's address; outbound over TLS: the host it called, verified as its server name", () => {
    const inbound = tracedEvent({ protocol: "http", http_server_addr: "127.0.0.1:8080", http_req_host: "localhost:8080" });
    expect(replayTarget(inbound)).toEqual({
      direction: "inbound",
      address: "127.0.0.1:8080",
      host: "localhost:8080",
      isTls: false,
      serverName: "localhost",
    });
    const outbound = tracedEvent({
      protocol: "http",
      http_is_outgoing: true,
      http_server_addr: "93.184.216.34:443",
      http_req_host: "api.example.com",
      tls_server_name: "api.example.com",
      tags: { tls: "decrypted" },
    });
    expect(replayTarget(outbound)).toMatchObject({
      direction: "outbound",
      address: "93.184.216.34:443",
      isTls: true,
      serverName: "api.example.com",
    });
  });

  test("what cannot be sent again says so", () => {
    expect(refusal(() => replayTarget(tracedEvent({ protocol: "tcp" })))).toMatch(/only HTTP/);
    expect(refusal(() => replayTarget(tracedEvent({ protocol: "http", http_req_method: "CONNECT", http_server_addr: "a:1" })))).toMatch(
      /CONNECT/,
    );
  });
});
