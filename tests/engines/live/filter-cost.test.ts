import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { liveSocketUrl } from "~/lib/protocol/live.ts";
import { listenTestApp, startTestApp, type TestApp } from "../../support/app.ts";
import { tracedEvent as makeEvent } from "../../support/event-factory.ts";
import { LiveClient } from "../../support/live-client.ts";
import { rng } from "../../support/rng.ts";

/**
 * Issue 14, item 2, end to end: an anonymous link, a publisher on the real publish socket, a viewer on the real live
 * socket sending a filter whose regexes are linear but hundreds of steps per character. The database plays no part,
 * so one backend is enough.
 */
describe("a costly live filter never holds the server", () => {
  let t: TestApp;
  let listener: ReturnType<typeof listenTestApp>;
  let base: string;

  beforeAll(async () => {
    t = await startTestApp({ backend: "pglite" });
    listener = listenTestApp(t);
    base = listener.base;
  }, 60_000);
  afterAll(async () => {
    await listener?.stop();
    await t?.close();
  });

  const local = (url: string) => listener.socketUrl(url);

  /**
   * The slowest /api/health answer while nothing else runs, over `ms`: the baseline of this machine now. The old
   * hub held the loop for 8 to 27 s on these filters; a busy machine adds tens or a few hundred ms.
   */
  async function slowestHealthIdle(ms: number): Promise<number> {
    return slowestHealthDuring(() => Bun.sleep(ms));
  }

  /** Asks /api/health every 10 ms while `work` runs; the slowest answer in ms. */
  async function slowestHealthDuring(work: () => Promise<void>): Promise<number> {
    let slowest = 0;
    let isDone = false;
    const poll = (async () => {
      while (!isDone) {
        const t0 = performance.now();
        const res = await fetch(`${base}/api/health`);
        expect(res.status).toBe(200);
        slowest = Math.max(slowest, performance.now() - t0);
        await Bun.sleep(10);
      }
    })();
    try {
      await work();
    } finally {
      isDone = true;
      await poll;
    }
    return slowest;
  }

  async function anonymousLink(paths: string[], bodyOf: (i: number) => string = () => "") {
    const join = await t.call("/api/JoinPublisher", {}, { origin: null });
    expect(join.status).toBe(200);
    const pub = await LiveClient.open(local(join.body.websocketUrl));
    await pub.until(() => pub.texts.some((m) => m.includes('"ready"')), "publisher ready");
    let seq = 0;
    let n = 0;
    const event = (p: string) => {
      const body = bodyOf(n++);
      return makeEvent({ http_req_path: p, http_resp_content_type: "text/plain", http_resp_body: Buffer.from(body).toString("base64") });
    };
    const send = (batch: string[]) => pub.send({ type: "events", seq: ++seq, events: batch.map(event) });
    for (let i = 0; i < paths.length; i += 250) send(paths.slice(i, i + 250));
    await pub.until(() => pub.texts.filter((m) => m.includes('"ack"')).length === seq, "acks");
    const linkUrl = (await t.call("/api/GetLink", { linkId: join.body.linkId })).body.linkUrl;
    const viewer = await LiveClient.open(local(liveSocketUrl(linkUrl)!));
    await viewer.until(() => viewer.of("history").length === 1, "history");
    expect(viewer.of("history")[0]!.events).toHaveLength(paths.length);
    return { pub, send, viewer, linkUrl };
  }

  function abPaths(count: number, length: number, seed: number): string[] {
    const r = rng(seed);
    return Array.from({ length: count }, () => {
      let s = "/";
      while (s.length < length) s += r() < 0.5 ? "a" : "b";
      return s;
    });
  }

  test("a filter affordable per event but not over 1,000 retained events is read in slices and refused; /api/health stays answered", async () => {
    const { pub, send, viewer } = await anonymousLink(abPaths(1000, 400, 3));
    const baseline = await slowestHealthIdle(500);
    const slowest = await slowestHealthDuring(async () => {
      await Bun.sleep(30);
      viewer.send({
        type: "setConfig",
        revision: 1,
        filters: ['request.url matches "[ab]*a[ab]{12}z" || request.url matches "[ab]*b[ab]{12}z"'],
      });
      await viewer.until(() => viewer.of("setFilterError").length === 1, "setFilterError", 10_000);
    });
    expect(slowest).toBeLessThan(baseline + 1000);
    expect(viewer.of("setFilterError")[0]).toMatchObject({ revision: 1, message: expect.stringContaining("retained events") });
    // A filter it can afford is applied after that.
    viewer.send({ type: "setConfig", revision: 2, filters: ['request.url matches "^/ab"'] });
    await viewer.until(() => viewer.of("history").length === 2, "history of revision 2");
    expect(viewer.of("config-applied")).toEqual([{ type: "config-applied", revision: 2 }]);
    expect(viewer.of("history")[1]!.events.every((e) => e.http_req_path.startsWith("/ab"))).toBe(true);
    send(["/abc", "/ba"]);
    await viewer.until(() => viewer.paths().length === 1, "the next event");
    expect(viewer.paths()).toEqual(["/abc"]);
    viewer.close();
    pub.close();
  }, 60_000);

  test("64 OR-ed `[ab]*a[ab]{99}z` clauses over 10 retained 4,200-character URLs: setFilterError at once, /api/health stays answered", async () => {
    const { pub, send, viewer } = await anonymousLink(abPaths(10, 4200, 2));
    const filter = Array.from({ length: 64 }, () => 'request.url matches "[ab]*a[ab]{99}z"').join(" || ");
    const baseline = await slowestHealthIdle(500);
    const slowest = await slowestHealthDuring(async () => {
      await Bun.sleep(30);
      viewer.send({ type: "setConfig", revision: 1, filters: [filter] });
      await viewer.until(() => viewer.of("setFilterError").length === 1, "setFilterError", 2000);
      await Bun.sleep(30);
    });
    expect(slowest).toBeLessThan(baseline + 1000);
    expect(viewer.of("setFilterError")[0]).toMatchObject({
      revision: 1,
      index: 0,
      position: 0,
      message: expect.stringContaining("too costly"),
    });
    expect(viewer.of("config-applied")).toEqual([]);

    // The viewer keeps watching under its previous config (none): a new event still arrives.
    send(["/after"]);
    await viewer.until(() => viewer.paths().includes("/after"), "the next event");
    viewer.close();
    pub.close();
  }, 60_000);

  test("a hostile body regex over 1,000 retained 5 KiB bodies is refused in slices; /api/health stays answered", async () => {
    const bodies = abPaths(1000, 5 * 1024, 4);
    const { pub, send, viewer } = await anonymousLink(
      bodies.map((_, i) => `/b${i}`),
      (i) => bodies[i] ?? "",
    );
    const baseline = await slowestHealthIdle(500);
    const slowest = await slowestHealthDuring(async () => {
      await Bun.sleep(30);
      viewer.send({
        type: "setConfig",
        revision: 1,
        filters: ['response.body matches "[ab]*a[ab]{12}z" || response.body matches "[ab]*b[ab]{12}z"'],
      });
      await viewer.until(() => viewer.of("setFilterError").length === 1, "setFilterError", 20_000);
    });
    expect(slowest).toBeLessThan(baseline + 1000);
    expect(viewer.of("setFilterError")[0]).toMatchObject({ revision: 1, message: expect.stringContaining("too costly") });
    // A body search it can afford is applied to the same history, and to what comes next.
    viewer.send({ type: "setConfig", revision: 2, filters: ['response.body contains "abab"'] });
    await viewer.until(() => viewer.of("history").length === 2, "history of revision 2");
    const wanted = bodies.filter((b) => b.includes("abab")).length;
    expect(viewer.of("history")[1]!.events).toHaveLength(wanted);
    expect(wanted).toBeGreaterThan(900);
    send(["/after"]);
    await Bun.sleep(200);
    expect(viewer.paths()).toEqual([]);
    viewer.close();
    pub.close();
  }, 90_000);

  test("a 1 MiB body is searched to its end by contains; matches reads its first 64 KiB; the server stays answered", async () => {
    const big = `${"x".repeat(1024 * 1024 - 32)}order zebra-7781 end`;
    const { pub, send, viewer, linkUrl } = await anonymousLink(["/first"], () => "small");
    const finder = await LiveClient.open(local(liveSocketUrl(linkUrl)!));
    const matcher = await LiveClient.open(local(liveSocketUrl(linkUrl)!));
    finder.send({ type: "setConfig", revision: 1, filters: ['response.body contains "zebra-7781"'] });
    matcher.send({ type: "setConfig", revision: 1, filters: ['response.body matches "zebra-[0-9]+"'] });
    await finder.until(() => finder.of("config-applied").length === 1, "config applied");
    await matcher.until(() => matcher.of("config-applied").length === 1, "config applied");
    const baseline = await slowestHealthIdle(300);
    const slowest = await slowestHealthDuring(async () => {
      pub.send({
        type: "events",
        seq: 100,
        events: [
          makeEvent({ http_req_path: "/big", http_resp_content_type: "text/plain", http_resp_body: Buffer.from(big).toString("base64") }),
        ],
      });
      await finder.until(() => finder.paths().includes("/big"), "the big event", 20_000);
    });
    expect(slowest).toBeLessThan(baseline + 1000);
    send(["/next"]);
    await viewer.until(() => viewer.paths().includes("/next"), "the next event");
    expect(finder.paths()).toEqual(["/big"]);
    expect(matcher.paths()).toEqual([]);
    for (const c of [finder, matcher, viewer, pub]) c.close();
  }, 60_000);
});
