import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { desc } from "drizzle-orm";
import { eventLog } from "#db/schema/index.ts";
import { formatTagsHeader } from "~/api/telemetry/tags.ts";
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
      const res = await post("/api/LogEvent", "kind=QueryEvaluated;duration_ms=12", {
        cookie: u.cookie,
        "content-type": "application/json",
      });
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

    test("tags are bounded: each value cut to 2,048 characters, all values to 4,096 in the order sent, more than 16 tags refused", async () => {
      const big = { kind: "Big", error_message: "m".repeat(3_000), error_stack: "s".repeat(10_000), component_stack: "c".repeat(100) };
      expect((await post("/api/Event", formatTagsHeader(big))).status).toBe(200);
      const { tags } = await latest();
      expect(tags.error_message).toBe("m".repeat(2_048));
      expect(tags.error_stack).toBe("s".repeat(2_048));
      expect(tags.component_stack).toBe("");
      // A cut never leaves half of a character that takes two UTF-16 units (PostgreSQL would refuse the row).
      expect((await post("/api/Event", formatTagsHeader({ kind: "Emoji", text: `${"x".repeat(2_047)}😀😀` }))).status).toBe(200);
      expect((await latest()).tags.text).toBe("x".repeat(2_047));
      const many = Object.fromEntries([["kind", "Many"], ...Array.from({ length: 17 }, (_, i) => [`k${i}`, "v"])]);
      const refused = await post("/api/Event", formatTagsHeader(many));
      expect(refused.status).toBe(400);
      expect(refused.body.error).toContain("at most 16 tags");
    });

    test("one client flooding reports gets 429 with Retry-After after its budget; another client is unaffected", async () => {
      const report = (peer: string) =>
        t.request("/api/LogEvent", { method: "POST", headers: { origin: "http://tapscope.test", "x-tags": "kind=Flood" } }, { peer });
      const before = await t.db.$count(eventLog);
      const statuses: number[] = [];
      for (let i = 0; i < 30; i++) statuses.push((await report("203.0.113.5")).status);
      expect(statuses).toEqual(Array(30).fill(200));
      const limited = await report("203.0.113.5");
      expect(limited.status).toBe(429);
      expect(limited.body.error).toBeString();
      expect(limited.headers.get("retry-after")).toBe("1");
      expect(limited.headers.get("x-trace-id")).toMatch(/^\S{8,}$/);
      expect((await post("/api/Event", "kind=Flood")).status).toBe(200);
      expect((await report("203.0.113.6")).status).toBe(200);
      // IPv6 clients are counted by their /64.
      for (let i = 0; i < 30; i++) await report(`2001:db8:1:2::${i.toString(16)}`);
      expect((await report("2001:db8:1:2:ffff::1")).status).toBe(429);
      expect(await t.db.$count(eventLog)).toBe(before + 30 + 2 + 30);
      t.clock.advance(1_000);
      expect((await report("203.0.113.5")).status).toBe(200);
    });

    test("a flood from many addresses meets the global budget", async () => {
      t.clock.advance(60_000);
      const statuses: number[] = [];
      for (let i = 0; i < 320; i++) {
        const res = await t.request(
          "/api/Event",
          { method: "POST", headers: { "x-tags": "kind=Flood" } },
          { peer: `198.18.${i >> 8}.${i & 255}` },
        );
        statuses.push(res.status);
      }
      expect(statuses.slice(0, 300).every((s) => s === 200)).toBe(true);
      expect(statuses.slice(300).every((s) => s === 429)).toBe(true);
    });
  });
}
