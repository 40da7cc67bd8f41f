import { describe, expect, test } from "bun:test";
import { websocketUrl } from "~/lib/websocket-url.ts";

describe("websocketUrl", () => {
  test("wss for https, ws for http, with the path and its query", () => {
    expect(websocketUrl("https://tapscope.dev", "/api/Tunnel?ticket=a%2Fb")).toBe("wss://tapscope.dev/api/Tunnel?ticket=a%2Fb");
    expect(websocketUrl("http://127.0.0.1:4000", "/api/LiveSubscribe")).toBe("ws://127.0.0.1:4000/api/LiveSubscribe");
  });

  test("a path in the base stays as a prefix; trailing slashes, a query or a fragment in the base do not", () => {
    expect(websocketUrl("https://example.com/tapscope", "/api/PublishEvents")).toBe("wss://example.com/tapscope/api/PublishEvents");
    expect(websocketUrl("https://example.com/tapscope//", "/api/PublishEvents")).toBe("wss://example.com/tapscope/api/PublishEvents");
    expect(websocketUrl("http://localhost:3000/?x=1#top", "/api/worker")).toBe("ws://localhost:3000/api/worker");
  });

  test("a port that is the default for http stays off; others stay", () => {
    expect(websocketUrl("http://example.com:80", "/a")).toBe("ws://example.com/a");
    expect(websocketUrl("https://example.com:8443", "/a")).toBe("wss://example.com:8443/a");
  });
});
