import { afterAll, beforeAll, expect, test } from "bun:test";
import { connect } from "node:net";
import { listenTestApp, startTestApp, type TestApp } from "../../support/app.ts";

let t: TestApp;
let listener: ReturnType<typeof listenTestApp>;
beforeAll(async () => {
  t = await startTestApp({ backend: "pglite" });
  listener = listenTestApp(t);
});
afterAll(async () => {
  await listener.stop();
  await t.close();
});

function raw(port: number, request: string): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = "";
    const socket = connect(port, "127.0.0.1", () => socket.write(request));
    socket.on("data", (d) => {
      text += d.toString();
    });
    socket.on("end", () => resolve(text));
    socket.on("error", reject);
    setTimeout(() => {
      socket.destroy();
      resolve(text);
    }, 2000);
  });
}

test("a request without a Host header (HTTP/1.0, a load balancer's bare health check) gets a 400 that says so, not a 500", async () => {
  for (const path of ["/api/health", "/api/JoinPublisher", "/docs", "/"]) {
    const answer = await raw(listener.port, `GET ${path} HTTP/1.0\r\nConnection: close\r\n\r\n`);
    expect(answer).toStartWith("HTTP/1.1 400");
    expect(answer).toContain("the request has no Host header");
  }
  // With a Host header the same request is answered as always.
  expect(await raw(listener.port, "GET /api/health HTTP/1.0\r\nHost: localhost\r\n\r\n")).toStartWith("HTTP/1.1 200");
});
