import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { eq } from "drizzle-orm";
import { otlpExports } from "#db/schema/index.ts";
import { startTestApp, type TestApp } from "../../support/app.ts";
import { type OtlpReceiver, startOtlpReceiver } from "../../support/otlp-receiver.ts";

/** A namespace's export settings: admins only, secrets never shown back, bad input refused with a reason, a test span. */
let t: TestApp;
let receiver: OtlpReceiver;

beforeAll(async () => {
  receiver = await startOtlpReceiver();
  t = await startTestApp({ backend: "pglite" });
}, 60_000);
afterAll(async () => {
  await t?.close();
  receiver?.stop();
});

const save = (u: { cookie: string; namespaceId: string }, body: Record<string, unknown>) =>
  t.call("/api/SaveOtlpExport", { namespaceId: u.namespaceId, protocol: "http/protobuf", isEnabled: true, ...body }, { cookie: u.cookie });

describe("OTLP export settings", () => {
  test("headers are kept sealed and never sent back: the answer names them only", async () => {
    const u = await t.onboardedUser();
    const saved = await save(u, { endpoint: receiver.base, headers: [{ name: "Authorization", value: "Bearer very-secret-value" }] });
    expect(saved.status).toBe(200);
    expect(saved.body.settings).toMatchObject({
      endpoint: receiver.base,
      headerNames: ["Authorization"],
      areHeadersReadable: true,
      isEnabled: true,
      updatedByEmail: u.email,
    });
    expect(JSON.stringify(saved.body)).not.toContain("very-secret-value");
    const got = await t.call("/api/GetOtlpExport", { namespaceId: u.namespaceId }, { cookie: u.cookie });
    expect(JSON.stringify(got.body)).not.toContain("very-secret-value");
    const [row] = await t.db.select().from(otlpExports).where(eq(otlpExports.namespaceId, u.namespaceId));
    expect(row!.headersSealed).not.toContain("very-secret-value");
    expect(Buffer.from(row!.headersSealed, "base64").toString("latin1")).not.toContain("very-secret");

    // Saving again without headers keeps them: the test span still carries the key.
    await save(u, { endpoint: receiver.base });
    const sent = await t.call("/api/SendOtlpTestSpan", { namespaceId: u.namespaceId }, { cookie: u.cookie });
    expect(sent.status).toBe(200);
    expect(sent.body).toMatchObject({ isOk: true, status: 200, message: "accepted", endpoint: `${receiver.base}/v1/traces` });
    const request = receiver.requests.at(-1)!;
    expect(request.headers.get("authorization")).toBe("Bearer very-secret-value");
    expect(request.spans).toHaveLength(1);
    expect(request.spans[0]!.name).toBe("tapscope test span");
    expect(request.spans[0]!.traceId).toBe(sent.body.traceId);

    // An empty list removes them.
    const cleared = await save(u, { endpoint: receiver.base, headers: [] });
    expect(cleared.body.settings.headerNames).toEqual([]);
  });

  test("the test span says what the collector answered, and when nothing answered", async () => {
    const u = await t.onboardedUser();
    await save(u, { endpoint: receiver.base });
    receiver.answerNext({ status: 401, body: "invalid API key", contentType: "text/plain" });
    const refused = await t.call("/api/SendOtlpTestSpan", { namespaceId: u.namespaceId }, { cookie: u.cookie });
    expect(refused.body).toMatchObject({ isOk: false, status: 401, message: "invalid API key" });

    const closed = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
    const port = closed.port;
    closed.stop(true);
    await save(u, { endpoint: `http://127.0.0.1:${port}` });
    const unreachable = await t.call("/api/SendOtlpTestSpan", { namespaceId: u.namespaceId }, { cookie: u.cookie });
    expect(unreachable.body.isOk).toBe(false);
    expect(unreachable.body.status).toBeNull();
    expect(unreachable.body.message).toStartWith("could not connect");
  });

  test("without a collector the test span is refused with a reason; the server-wide one is named without its secrets", async () => {
    const u = await t.onboardedUser();
    const none = await t.call("/api/SendOtlpTestSpan", { namespaceId: u.namespaceId }, { cookie: u.cookie });
    expect(none.status).toBe(400);
    expect(none.body.error).toContain("no collector");
    const got = await t.call("/api/GetOtlpExport", { namespaceId: u.namespaceId }, { cookie: u.cookie });
    expect(got.body).toMatchObject({ settings: null, serverDefault: null, destination: "none" });

    const withDefault = await startTestApp({
      backend: "pglite",
      env: { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "https://user:pw@collector.example/v1/traces?key=abc", OTEL_EXPORTER_OTLP_HEADERS: "k=v" },
    });
    try {
      const v = await withDefault.onboardedUser();
      const answer = await withDefault.call("/api/GetOtlpExport", { namespaceId: v.namespaceId }, { cookie: v.cookie });
      expect(answer.body.serverDefault).toEqual({ endpoint: "https://collector.example/v1/traces", protocol: "http/protobuf" });
      expect(answer.body.destination).toBe("server");
      expect(JSON.stringify(answer.body)).not.toContain("pw");
      expect(JSON.stringify(answer.body)).not.toContain("abc");
    } finally {
      await withDefault.close();
    }
  }, 60_000);

  test("bad endpoints and headers are refused with the reason, and nothing is stored", async () => {
    const u = await t.onboardedUser();
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ endpoint: "collector:4318" }, "must be an http"],
      [{ endpoint: "not a url" }, "must be a URL"],
      [{ endpoint: "ftp://collector.example" }, "http:// or https://"],
      [{ endpoint: "https://key:secret@collector.example" }, "not in the endpoint URL"],
      [{ endpoint: receiver.base, headers: [{ name: "bad name", value: "x" }] }, "is not a header name"],
      [{ endpoint: receiver.base, headers: [{ name: "Content-Type", value: "text/plain" }] }, "set by the export itself"],
      [{ endpoint: receiver.base, headers: [{ name: "x-a", value: "one\r\nx-b: two" }] }, "control character"],
      [
        {
          endpoint: receiver.base,
          headers: [
            { name: "x-a", value: "1" },
            { name: "X-A", value: "2" },
          ],
        },
        "given twice",
      ],
    ];
    for (const [body, reason] of cases) {
      const res = await save(u, body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.error, JSON.stringify(body)).toContain(reason);
    }
    // Past the schema's bounds: too many headers, an endpoint too long.
    const many = Array.from({ length: 17 }, (_, i) => ({ name: `x-${i}`, value: "v" }));
    expect((await save(u, { endpoint: receiver.base, headers: many })).status).toBe(400);
    expect((await save(u, { endpoint: `https://c.example/${"a".repeat(2100)}` })).status).toBe(400);
    expect(await t.db.select().from(otlpExports).where(eq(otlpExports.namespaceId, u.namespaceId))).toEqual([]);
    // Turned off, no endpoint is needed (to stop the server-wide export for this namespace).
    expect((await save(u, { endpoint: "", isEnabled: false })).status).toBe(200);
  });

  test("OTLP_DESTINATIONS=public refuses collectors on the server's own network", async () => {
    const hosted = await startTestApp({ backend: "pglite", env: { OTLP_DESTINATIONS: "public" } });
    try {
      const u = await hosted.onboardedUser();
      for (const endpoint of [
        "http://127.0.0.1:4318",
        "http://169.254.169.254/latest",
        "http://[::1]:4318",
        "http://10.1.2.3",
        "http://localhost:4318",
      ]) {
        const res = await hosted.call(
          "/api/SaveOtlpExport",
          { namespaceId: u.namespaceId, endpoint, protocol: "http/protobuf", isEnabled: true },
          { cookie: u.cookie },
        );
        expect(res.status, endpoint).toBe(400);
        expect(res.body.error, endpoint).toContain("private address");
      }
    } finally {
      await hosted.close();
    }
  }, 60_000);

  test("removing the settings gives the namespace back to the server-wide collector (here: none)", async () => {
    const u = await t.onboardedUser();
    await save(u, { endpoint: receiver.base });
    expect((await t.call("/api/DeleteOtlpExport", { namespaceId: u.namespaceId }, { cookie: u.cookie })).status).toBe(200);
    const got = await t.call("/api/GetOtlpExport", { namespaceId: u.namespaceId }, { cookie: u.cookie });
    expect(got.body).toMatchObject({ settings: null, destination: "none" });
  });

  test("test spans are limited per namespace", async () => {
    const u = await t.onboardedUser();
    await save(u, { endpoint: receiver.base });
    const statuses: number[] = [];
    for (let i = 0; i < 22; i++)
      statuses.push((await t.call("/api/SendOtlpTestSpan", { namespaceId: u.namespaceId }, { cookie: u.cookie })).status);
    expect(statuses.slice(0, 20).every((s) => s === 200)).toBe(true);
    expect(statuses.at(-1)).toBe(429);
  }, 30_000);
});
