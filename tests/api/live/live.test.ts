import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { eq } from "drizzle-orm";
import { links, orgs } from "#db/schema/index.ts";
import { liveSocketUrl } from "~/lib/protocol/live.ts";
import { randomId } from "~/lib/server/ids.ts";
import { createRuntime, type Runtime } from "~/runtime.ts";
import { createApp } from "~/server.ts";
import { backends, startTestApp, type TestApp } from "../../support/app.ts";
import { tracedEvent as makeEvent } from "../../support/event-factory.ts";
import { isRefused, LiveClient, RawWsClient } from "../../support/live-client.ts";

for (const backend of backends) {
  describe(`live view and links [${backend}]`, () => {
    let t: TestApp;
    let runtime: Runtime;
    let server: ReturnType<ReturnType<typeof createApp>["listen"]>;
    let port: number;
    const hub = () => runtime.hub;

    beforeAll(async () => {
      t = await startTestApp({ backend });
      // A second app on the same database, listening, whose runtime (hence hub) this test holds.
      runtime = createRuntime({ config: t.config, db: t.db, now: t.clock.now });
      server = createApp(runtime).listen({ port: 0, hostname: "127.0.0.1" });
      port = server.server!.port!;
    }, 60_000);
    afterAll(async () => {
      await server?.stop(true);
      await t?.close();
    });

    /** The URL the server handed out, pointed at the test listener. */
    function local(url: string): string {
      const u = new URL(url);
      return `ws://127.0.0.1:${port}${u.pathname}${u.search}`;
    }

    async function joinUrl(cookie: string, namespaceId: string): Promise<string> {
      const res = await t.call("/api/JoinSubscriber", { namespaceId }, { cookie });
      expect(res.status).toBe(200);
      return local(res.body.websocketUrl);
    }

    async function makeLink(expiresInMs: number, namespaceId: string | null = null): Promise<string> {
      const id = randomId();
      await t.db.insert(links).values({ id, namespaceId, expiresAt: new Date(t.clock.now().getTime() + expiresInMs) });
      return id;
    }

    describe("JoinSubscriber", () => {
      test("a member gets a socket URL on our origin with a ticket", async () => {
        const u = await t.onboardedUser();
        const res = await t.call("/api/JoinSubscriber", { namespaceId: u.namespaceId }, { cookie: u.cookie });
        expect(res.status).toBe(200);
        const url = new URL(res.body.websocketUrl);
        expect(url.protocol).toBe("ws:");
        expect(url.host).toBe(new URL(t.config.publicUrl).host);
        expect(url.pathname).toBe("/api/LiveSubscribe");
        expect(url.searchParams.get("ticket")!.length).toBeGreaterThan(40);
      });

      test("anonymous is 401, a non-member 404, a cross-site page 403", async () => {
        const owner = await t.onboardedUser();
        const stranger = await t.onboardedUser();
        expect((await t.call("/api/JoinSubscriber", { namespaceId: owner.namespaceId })).status).toBe(401);
        expect((await t.call("/api/JoinSubscriber", { namespaceId: owner.namespaceId }, { cookie: stranger.cookie })).status).toBe(404);
        expect((await t.call("/api/JoinSubscriber", { namespaceId: "not-a-uuid" }, { cookie: stranger.cookie })).status).toBe(404);
        const cross = await t.call(
          "/api/JoinSubscriber",
          { namespaceId: owner.namespaceId },
          { cookie: owner.cookie, origin: "https://evil.example" },
        );
        expect(cross.status).toBe(403);
      });

      test("the ticket opens the namespace's live socket once; tampered, reused and stale tickets are refused", async () => {
        const u = await t.onboardedUser();
        const url = await joinUrl(u.cookie, u.namespaceId);
        const client = await LiveClient.open(url);
        await client.until(() => client.of("history").length === 1, "history");
        expect(client.of("hello")[0]).toEqual({ type: "hello", channel: "namespace", expiresAt: null });
        client.close();
        expect(await isRefused(url)).toBe(true);

        const fresh = new URL(await joinUrl(u.cookie, u.namespaceId));
        const ticket = fresh.searchParams.get("ticket")!;
        const tampered = new URL(fresh);
        tampered.searchParams.set("ticket", `${ticket.slice(0, 10)}${ticket[10] === "A" ? "B" : "A"}${ticket.slice(11)}`);
        expect(await isRefused(tampered.toString())).toBe(true);
        expect(await isRefused(`ws://127.0.0.1:${port}/api/LiveSubscribe`)).toBe(true);

        t.clock.advance(61_000);
        expect(await isRefused(fresh.toString())).toBe(true);
      });
    });

    describe("the live socket", () => {
      test("a subscriber gets only its namespace's events, filtered on the server, with revisions echoed", async () => {
        const a = await t.onboardedUser();
        const b = await t.onboardedUser();
        const ca = await LiveClient.open(await joinUrl(a.cookie, a.namespaceId));
        const cb = await LiveClient.open(await joinUrl(b.cookie, b.namespaceId));
        ca.send({ type: "setConfig", revision: 1, filters: ['request.method == "POST"'] });
        await ca.until(() => ca.of("config-applied").length === 1, "config-applied");
        expect(ca.of("config-applied")[0]).toEqual({ type: "config-applied", revision: 1 });

        hub().accept({ namespaceId: a.namespaceId, linkId: null }, [
          makeEvent({ http_req_method: "POST", http_req_path: "/a-post" }),
          makeEvent({ http_req_method: "GET", http_req_path: "/a-get" }),
        ]);
        hub().accept({ namespaceId: b.namespaceId, linkId: null }, [makeEvent({ http_req_path: "/b" })]);
        await ca.until(() => ca.paths().length >= 1, "a's events");
        await cb.until(() => cb.paths().length >= 1, "b's events");
        expect(ca.paths()).toEqual(["/a-post"]);
        expect(cb.paths()).toEqual(["/b"]);

        ca.send({ type: "setConfig", revision: 2, filters: ["response.status >>= 1"] });
        await ca.until(() => ca.of("setFilterError").length === 1, "setFilterError");
        expect(ca.of("setFilterError")[0]).toMatchObject({ revision: 2, index: 0, position: 17 });
        // Garbage never breaks the socket.
        ca.send("not json");
        ca.send({ type: "setConfig", revision: -1, filters: "x" });
        ca.send({ type: "setConfig", revision: 3, filters: [] });
        await ca.until(() => ca.of("config-applied").length === 2, "second config-applied");
        expect(ca.of("config-applied")[1]!.revision).toBe(3);
        ca.close();
        cb.close();
      });

      test("stats follow publishers and subscribers", async () => {
        const u = await t.onboardedUser();
        const c = await LiveClient.open(await joinUrl(u.cookie, u.namespaceId));
        await c.until(() => c.of("stats").length === 1, "stats");
        expect(c.of("stats")[0]).toEqual({ type: "stats", numPublishers: 0, numSubscribers: 1 });
        hub().publisherConnected({ namespaceId: u.namespaceId, linkId: null });
        const second = await LiveClient.open(await joinUrl(u.cookie, u.namespaceId));
        await c.until(() => c.of("stats").length === 3, "two stats updates");
        expect(c.of("stats").at(-1)).toEqual({ type: "stats", numPublishers: 1, numSubscribers: 2 });
        second.close();
        await c.until(() => c.of("stats").length === 4, "a subscriber left");
        expect(c.of("stats").at(-1)).toEqual({ type: "stats", numPublishers: 1, numSubscribers: 1 });
        hub().publisherDisconnected({ namespaceId: u.namespaceId, linkId: null });
        await c.until(() => c.of("stats").length === 5, "publisher left");
        expect(c.of("stats").at(-1)).toEqual({ type: "stats", numPublishers: 0, numSubscribers: 1 });
        c.close();
      });

      test("a reader that stops reading drops events and is told; a fast one on the same namespace gets all", async () => {
        const u = await t.onboardedUser();
        const fast = await LiveClient.open(await joinUrl(u.cookie, u.namespaceId));
        const slowUrl = new URL(await joinUrl(u.cookie, u.namespaceId));
        const slow = await RawWsClient.open(port, slowUrl.pathname + slowUrl.search);
        slow.pause();
        const body = Buffer.alloc(2000, "x").toString("base64");
        const total = 20_000;
        const t0 = performance.now();
        for (let i = 0; i < total; i += 100) {
          hub().accept(
            { namespaceId: u.namespaceId, linkId: null },
            Array.from({ length: 100 }, (_, k) => makeEvent({ http_req_path: `/${i + k}`, http_resp_body: body })),
          );
          await Bun.sleep(0);
        }
        const publishMs = performance.now() - t0;
        await fast.until(() => fast.paths().length === total, "every event at the fast reader", 20_000);
        expect(fast.of("dropped")).toEqual([]);
        expect(publishMs).toBeLessThan(10_000);
        slow.resume();
        await fast.until(() => slow.of("dropped").length > 0, "a dropped report at the slow reader", 10_000);
        const dropped = slow.of("dropped").reduce((n, m) => n + m.count, 0);
        const received = slow.of("events").reduce((n, m) => n + m.events.length, 0);
        expect(dropped).toBeGreaterThan(0);
        await fast.until(
          () => slow.of("events").reduce((n, m) => n + m.events.length, 0) + dropped >= total,
          "slow reader settles",
          10_000,
        );
        expect(slow.of("events").reduce((n, m) => n + m.events.length, 0) + slow.of("dropped").reduce((n, m) => n + m.count, 0)).toBe(
          total,
        );
        expect(received).toBeLessThan(total);
        slow.destroy();
        fast.close();
      }, 60_000);
    });

    describe("GetLink and link viewers", () => {
      test("GetLink answers the link page URL with its expiry, without sign-in", async () => {
        const id = await makeLink(3_600_000);
        const res = await t.call("/api/GetLink", { linkId: id }, { origin: null });
        expect(res.status).toBe(200);
        expect(res.headers.get("cache-control")).toBe("no-store");
        const url = new URL(res.body.linkUrl);
        expect(`${url.origin}${url.pathname}`).toBe(`${t.config.publicUrl}/link/${id}`);
        const expiry = new Date(url.searchParams.get("expiry")!);
        expect(expiry.getTime()).toBe(t.clock.now().getTime() + 3_600_000);
      });

      test("an expired link still answers, with its past expiry; unknown and malformed ids are 404", async () => {
        const id = await makeLink(-1000);
        const res = await t.call("/api/GetLink", { linkId: id });
        expect(res.status).toBe(200);
        expect(new Date(new URL(res.body.linkUrl).searchParams.get("expiry")!).getTime()).toBeLessThan(t.clock.now().getTime());
        expect((await t.call("/api/GetLink", { linkId: randomId() })).status).toBe(404);
        expect((await t.call("/api/GetLink", { linkId: "../../etc" })).status).toBe(404);
        expect((await t.call("/api/GetLink", { linkId: "' or 1=1 --" })).status).toBe(404);
      });

      test("a late viewer sees the link's earlier events (the last 1000), then live ones; other links stay apart", async () => {
        const id = await makeLink(3_600_000);
        const other = await makeLink(3_600_000);
        const earlier = Array.from({ length: 1200 }, (_, i) => makeEvent({ http_req_path: `/early${i}` }));
        hub().accept({ namespaceId: null, linkId: id }, earlier);
        hub().accept({ namespaceId: null, linkId: other }, [makeEvent({ http_req_path: "/other" })]);
        const linkUrl = (await t.call("/api/GetLink", { linkId: id })).body.linkUrl;
        const viewer = await LiveClient.open(local(liveSocketUrl(linkUrl)!));
        await viewer.until(() => viewer.of("history").length === 1, "history");
        const history = viewer.of("history")[0]!.events.map((e) => e.http_req_path);
        expect(history).toHaveLength(1000);
        expect(history[0]).toBe("/early200");
        expect(history.at(-1)).toBe("/early1199");
        expect(viewer.of("hello")[0]).toMatchObject({ channel: "link" });
        hub().accept({ namespaceId: null, linkId: id }, [makeEvent({ http_req_path: "/live" })]);
        hub().accept({ namespaceId: null, linkId: other }, [makeEvent({ http_req_path: "/other-live" })]);
        await viewer.until(() => viewer.paths().length === 1, "live event");
        expect(viewer.paths()).toEqual(["/live"]);
        viewer.close();
      });

      test("a viewer's frame past the message bound is never parsed nor applied; past the socket's own limit it closes the socket", async () => {
        const id = await makeLink(3_600_000);
        const viewer = await LiveClient.open(`ws://127.0.0.1:${port}/api/LiveSubscribe?link_id=${id}`);
        await viewer.until(() => viewer.of("hello").length === 1, "hello");
        // A valid setConfig padded past the config bound, within the socket's frame limit: ignored, the socket goes on.
        viewer.send(`{"type":"setConfig","revision":1,"filters":[],"pad":"${"x".repeat(300 * 1024)}"}`);
        viewer.send({ type: "setConfig", revision: 2, filters: [] });
        await viewer.until(() => viewer.of("config-applied").some((m) => m.revision === 2), "revision 2 applied");
        expect(viewer.of("config-applied").map((m) => m.revision)).toEqual([2]);
        expect(viewer.closeCode).toBeNull();
        viewer.close();

        // Padded to 8 MiB (Bun's frame limit was the only one, and Elysia parsed every such frame): closed with 1009.
        const big = await LiveClient.open(`ws://127.0.0.1:${port}/api/LiveSubscribe?link_id=${id}`);
        await big.until(() => big.of("hello").length === 1, "hello");
        big.send(`{"type":"setConfig","revision":1,"filters":[],"pad":"${"x".repeat(8 * 1024 * 1024)}"}`);
        await big.until(() => big.closeCode !== null, "close");
        expect(big.closeCode).toBe(1009);
        expect(big.of("config-applied")).toEqual([]);
      });

      test("unknown and expired links are refused; a link that expires while watched says so and closes", async () => {
        expect(await isRefused(`ws://127.0.0.1:${port}/api/LiveSubscribe?link_id=${randomId()}`)).toBe(true);
        const expired = await makeLink(-1);
        expect(await isRefused(`ws://127.0.0.1:${port}/api/LiveSubscribe?link_id=${expired}`)).toBe(true);

        const id = await makeLink(300);
        const viewer = await LiveClient.open(`ws://127.0.0.1:${port}/api/LiveSubscribe?link_id=${id}`);
        t.clock.advance(1000);
        await viewer.until(() => viewer.closeCode !== null, "close at expiry");
        expect(viewer.messages.at(-1)).toEqual({ type: "expired" });
        expect(viewer.closeCode).toBe(4410);
      });

      test("PingLink answers ping with pong; unknown links are refused", async () => {
        const id = await makeLink(3_600_000);
        const ping = await LiveClient.open(`ws://127.0.0.1:${port}/api/PingLink?link_id=${id}`);
        ping.send("ping");
        ping.send("ping");
        await ping.until(() => ping.texts.length === 2, "two pongs");
        expect(ping.texts).toEqual(["pong", "pong"]);
        ping.close();
        expect(await isRefused(`ws://127.0.0.1:${port}/api/PingLink?link_id=${randomId()}`)).toBe(true);
        expect(await isRefused(`ws://127.0.0.1:${port}/api/PingLink`)).toBe(true);
        expect(await isRefused(`ws://127.0.0.1:${port}/api/PingLink?link_id=${await makeLink(-1)}`)).toBe(true);
      });
    });

    describe("HasSeenPublisher", () => {
      test("members read their org's flag; others are refused", async () => {
        const u = await t.onboardedUser();
        const stranger = await t.onboardedUser();
        const before = await t.call("/api/HasSeenPublisher", { orgId: u.orgId }, { cookie: u.cookie });
        expect(before.status).toBe(200);
        expect(before.body).toEqual({ hasSeenPublisher: false });
        await t.db.update(orgs).set({ hasSeenPublisher: true }).where(eq(orgs.id, u.orgId));
        expect((await t.call("/api/HasSeenPublisher", { orgId: u.orgId }, { cookie: u.cookie })).body).toEqual({ hasSeenPublisher: true });
        expect((await t.call("/api/HasSeenPublisher", { orgId: u.orgId }, { cookie: stranger.cookie })).status).toBe(404);
        expect((await t.call("/api/HasSeenPublisher", { orgId: u.orgId })).status).toBe(401);
      });
    });
  });
}
