import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { desc } from "drizzle-orm";
import { eventLog } from "#db/schema/index.ts";
import { formatTagsHeader } from "~/api/events/tags.ts";
import { backends, startTestApp, type TestApp } from "../support/app.ts";

for (const backend of backends) {
  describe(`Event and LogEvent [${backend}]`, () => {
    let t: TestApp;
    beforeAll(async () => {
      t = await startTestApp({ backend });
    }, 60_000);
    afterAll(() => t.close());

    async function latest() {
      const [row] = await t.db.select().from(eventLog).orderBy(desc(eventLog.id)).limit(1);
      return row!;
    }

    function post(path: string, tags: string | undefined, headers: Record<string, string> = {}) {
      return t.request(path, {
        method: "POST",
        headers: { origin: "http://tapscope.test", ...(tags === undefined ? {} : { "x-tags": tags }), ...headers },
      });
    }

    test("an anonymous Event with an empty body stores kind and tags, any text surviving the header", async () => {
      const message = "login failed: 500; a=b & c=d\nline two ü €";
      const res = await post("/api/Event", formatTagsHeader({ kind: "EmailSubmitError", error_message: message, error_name: "Error" }));
      expect(res.status).toBe(200);
      expect(res.body).toEqual({});
      const row = await latest();
      expect(row.source).toBe("Event");
      expect(row.kind).toBe("EmailSubmitError");
      expect(row.tags).toEqual({ error_message: message, error_name: "Error" });
      expect(row.userId).toBeNull();
    });

    test("a signed-in LogEvent records the user", async () => {
      const u = await t.user();
      const res = await post("/api/LogEvent", "kind=QueryEvaluated;duration_ms=12", { cookie: u.cookie, "content-type": "application/json" });
      expect(res.status).toBe(200);
      const row = await latest();
      expect(row).toMatchObject({ source: "LogEvent", kind: "QueryEvaluated", tags: { duration_ms: "12" }, userId: u.userId });
    });

    test("a missing header or kind, or bad tag names, are 400", async () => {
      expect((await post("/api/Event", undefined)).status).toBe(400);
      expect((await post("/api/Event", "error_message=x")).status).toBe(400);
      expect((await post("/api/Event", "kind=Bad%20Kind")).status).toBe(400);
      expect((await post("/api/Event", "kind=X;bad%20key=1")).status).toBe(400);
      expect((await post("/api/Event", "kind=X;k=%E0%A4%A")).status).toBe(400);
    });

    test("with a session, a cross-site Event is refused", async () => {
      const u = await t.user();
      const res = await post("/api/Event", "kind=UncaughtAppBoundaryError", { cookie: u.cookie, origin: "https://evil.example" });
      expect(res.status).toBe(403);
    });

    test("oversized values are truncated, too many tags refused", async () => {
      expect((await post("/api/Event", formatTagsHeader({ kind: "Big", error_stack: "x".repeat(10_000) }))).status).toBe(200);
      expect((await latest()).tags.error_stack).toHaveLength(8192);
      const many = Object.fromEntries([["kind", "Many"], ...Array.from({ length: 40 }, (_, i) => [`k${i}`, "v"])]);
      expect((await post("/api/Event", formatTagsHeader(many))).status).toBe(400);
    });
  });
}
