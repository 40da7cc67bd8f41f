import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { desc, sql } from "drizzle-orm";
import { eventLog } from "#db/schema/index.ts";
import { formatTagsHeader } from "~/api/telemetry/tags.ts";
import { pruneMetadata } from "~/services/store/prune-metadata.ts";
import { backends, startTestApp, type TestApp } from "../../support/app.ts";

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

  describe(`event_log's size budget [${backend}]`, () => {
    let t: TestApp;
    const MiB = 1024 ** 2;
    beforeAll(async () => {
      t = await startTestApp({ backend, env: { EVENT_LOG_MAX_BYTES: "1MiB" } });
    }, 60_000);
    afterAll(() => t.close());

    /** The largest report there is: 4,096 characters of values. */
    const largest = (seq: number) => formatTagsHeader({ kind: "Big", seq: String(seq), a: "a".repeat(2_048), b: "b".repeat(2_040) });
    const report = (seq: number, peer: string) =>
      t.request("/api/Event", { method: "POST", headers: { origin: "http://tapscope.test", "x-tags": largest(seq) } }, { peer });
    const storedBytes = async () =>
      Number((await t.db.select({ total: sql<string>`coalesce(sum(${eventLog.bytes}), 0)` }).from(eventLog))[0]?.total ?? 0);
    const seqs = async () => (await t.db.select({ tags: eventLog.tags }).from(eventLog)).map((r) => Number(r.tags.seq));

    test("a flood of the largest reports from many addresses: the table holds the newest that fit in EVENT_LOG_MAX_BYTES", async () => {
      for (let seq = 0; seq < 400; seq++) {
        // Within the request budgets (100 a second for everyone): this is about size.
        if (seq % 100 === 99) t.clock.advance(1_000);
        const res = await report(seq, `198.51.100.${seq % 40}`);
        expect(res.status, `report ${seq}`).toBe(200);
      }
      // 400 reports of about 4.3 KB: 1.7 MB offered to a 1 MiB budget. Each node trims once a sixteenth of the
      // budget has come in since its last trim, so the table is at most that much over it between trims.
      const deadline = Date.now() + 15_000;
      while ((await storedBytes()) > MiB * (17 / 16) && Date.now() < deadline) await Bun.sleep(50);
      await t.runtime.eventLog.settled();
      expect(await storedBytes()).toBeLessThanOrEqual(MiB * (17 / 16));
      const kept = await seqs();
      expect(kept).toContain(399);
      expect(kept).not.toContain(0);
      // The oldest went first: what is kept is the newest run.
      expect(Math.min(...kept)).toBe(400 - kept.length);
      // The hourly metadata job holds it to the byte.
      await pruneMetadata({ db: t.db, now: t.clock.now, config: t.config });
      expect(await storedBytes()).toBeLessThanOrEqual(MiB);
    }, 60_000);

    test("one address stores at most its day's share: then 429 and nothing stored; others still report; a day later it may again", async () => {
      t.clock.advance(60_000);
      const statuses: number[] = [];
      for (let seq = 1_000; seq < 1_016; seq++) statuses.push((await report(seq, "203.0.113.50")).status);
      // 64 KiB a day for one address: fifteen of the largest reports.
      expect(statuses).toEqual([...Array(15).fill(200), 429]);
      const refused = await report(1_099, "203.0.113.50");
      expect(refused.status).toBe(429);
      expect(refused.body.error).toBe("too many reports stored from this address today; try again later");
      expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
      expect(await seqs()).not.toContain(1_015);
      expect((await report(1_100, "203.0.113.51")).status).toBe(200);
      t.clock.advance(24 * 60 * 60 * 1000);
      expect((await report(1_101, "203.0.113.50")).status).toBe(200);
    });
  });
}
