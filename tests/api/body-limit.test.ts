import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { JSON_BODY_LIMIT } from "~/api/plugins/body-limit.ts";
import { startTestApp, type TestApp } from "../support/app.ts";

describe("JSON API body limit (issue 14 item 6)", () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ backend: "pglite" });
  });
  afterAll(async () => {
    await t.close();
  });

  test("a declared 100 MB body is refused with 413 before it is read", async () => {
    let pulled = 0;
    const chunk = new Uint8Array(64 * 1024).fill(32);
    const body = new ReadableStream<Uint8Array>({
      pull(c) {
        pulled += chunk.byteLength;
        if (pulled > 100 * 1024 * 1024) c.close();
        else c.enqueue(chunk);
      },
    });
    const res = await t.app.handle(
      new Request("http://tapscope.test/api/EmailLogin", {
        method: "POST",
        headers: { "content-type": "application/json", "content-length": String(100 * 1024 * 1024) },
        body,
        // @ts-expect-error Bun accepts duplex for streamed bodies
        duplex: "half",
      }),
    );
    expect(res.status).toBe(413);
    expect((await res.json()).error).toContain("larger than");
    expect(pulled).toBeLessThan(1024 * 1024);
  });

  test("a chunked JSON body is read only up to the limit", async () => {
    let pulled = 0;
    const chunk = new Uint8Array(64 * 1024).fill(32);
    const body = new ReadableStream<Uint8Array>({
      pull(c) {
        pulled += chunk.byteLength;
        if (pulled > 100 * 1024 * 1024) c.close();
        else c.enqueue(chunk);
      },
    });
    const res = await t.app.handle(
      new Request("http://tapscope.test/api/EmailLogin", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body,
        // @ts-expect-error Bun accepts duplex for streamed bodies
        duplex: "half",
      }),
    );
    expect(res.status).toBe(413);
    expect(pulled).toBeLessThan(JSON_BODY_LIMIT + 256 * 1024);
  });
});
