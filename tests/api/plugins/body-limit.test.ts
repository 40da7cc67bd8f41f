import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { JSON_BODY_LIMIT } from "~/api/plugins/body-limit.ts";
import { startTestApp, type TestApp } from "../../support/app.ts";

describe("JSON API body limit (issue 14 item 6)", () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ backend: "pglite" });
  });
  afterAll(async () => {
    await t.close();
  });

  test("a declared 100 MB body is refused with 413 before it is read", async () => {
    const { body, counter } = endless();
    const res = await post("/api/EmailLogin", { "content-type": "application/json", "content-length": String(100 * 1024 * 1024) }, body);
    expect(res.status).toBe(413);
    expect(res.body?.error).toContain("larger than");
    expect(counter.pulled).toBeLessThan(1024 * 1024);
  });

  test("a chunked JSON body is read only up to the limit", async () => {
    const { body, counter } = endless();
    const res = await post("/api/EmailLogin", { "content-type": "application/json" }, body);
    expect(res.status).toBe(413);
    expect(counter.pulled).toBeLessThan(JSON_BODY_LIMIT + 256 * 1024);
  });

  /** An endless body that counts what the server pulled of it. */
  function endless() {
    const counter = { pulled: 0 };
    const chunk = new Uint8Array(64 * 1024).fill(32);
    const body = new ReadableStream<Uint8Array>({
      pull(c) {
        counter.pulled += chunk.byteLength;
        if (counter.pulled > 100 * 1024 * 1024) c.close();
        else c.enqueue(chunk);
      },
    });
    return { body, counter, chunkBytes: chunk.byteLength };
  }

  async function post(path: string, headers: Record<string, string>, body: BodyInit) {
    const res = await t.app.handle(
      new Request(`http://tapscope.test${path}`, {
        method: "POST",
        headers: { origin: "http://tapscope.test", ...headers },
        body,
        // @ts-expect-error Bun accepts duplex for streamed bodies
        duplex: "half",
      }),
    );
    return {
      status: res.status,
      body: (await res.json().catch(() => null)) as { error?: string } | null,
      traceId: res.headers.get("x-trace-id"),
    };
  }

  test("a body of any type is read only up to the limit (the API's text, form and binary parsers never see it whole)", async () => {
    for (const type of [
      "text/plain",
      "application/x-www-form-urlencoded",
      "application/octet-stream",
      "multipart/form-data; boundary=x",
      "application/json",
    ]) {
      const { body, counter, chunkBytes } = endless();
      const res = await post("/api/LogEvent", { "content-type": type }, body);
      expect([type, res.status, res.body?.error]).toEqual([type, 413, `Request body is larger than ${JSON_BODY_LIMIT} bytes.`]);
      expect(res.traceId).toMatch(/^\S{8,}$/);
      expect(counter.pulled).toBeLessThanOrEqual(JSON_BODY_LIMIT + 2 * chunkBytes);
    }
  });

  test("every JSON route has the limit: sign-in, telemetry, and a session's own calls with or without the session", async () => {
    const owner = await t.onboardedUser();
    const routes: Array<[string, Record<string, string>]> = [
      ["/api/EmailLogin", {}],
      ["/api/Event", {}],
      ["/api/LogEvent", {}],
      ["/api/GenerateNamespaceToken", { cookie: owner.cookie }],
      ["/api/GenerateNamespaceToken", {}],
    ];
    for (const [path, headers] of routes) {
      const { body, counter, chunkBytes } = endless();
      const streamed = await post(path, { "content-type": "application/json", ...headers }, body);
      expect([path, streamed.status, streamed.body?.error]).toEqual([path, 413, `Request body is larger than ${JSON_BODY_LIMIT} bytes.`]);
      expect(counter.pulled).toBeLessThanOrEqual(JSON_BODY_LIMIT + 2 * chunkBytes);
      const declared = await post(
        path,
        { "content-type": "application/json", ...headers },
        JSON.stringify({ pad: "x".repeat(JSON_BODY_LIMIT) }),
      );
      expect([path, declared.status]).toEqual([path, 413]);
    }
    // Just under the limit is an ordinary request.
    const under = await post(
      "/api/GenerateNamespaceToken",
      { "content-type": "application/json", cookie: owner.cookie },
      JSON.stringify({ namespaceId: owner.namespaceId, note: "x".repeat(JSON_BODY_LIMIT - 1024) }),
    );
    expect(under.status).not.toBe(413);
  });
});
