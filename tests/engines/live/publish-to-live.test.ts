import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { liveSocketUrl } from "~/lib/protocol/live.ts";
import { backends, listenTestApp, startTestApp, type TestApp } from "../../support/app.ts";
import { tracedEvent as makeEvent } from "../../support/event-factory.ts";
import { LiveClient } from "../../support/live-client.ts";

/** The whole path: a publisher on the real publish socket -> ingest -> live hub -> viewers on the live socket. */
for (const backend of backends) {
  describe(`publish to live [${backend}]`, () => {
    let t: TestApp;
    let listener: ReturnType<typeof listenTestApp>;

    beforeAll(async () => {
      t = await startTestApp({ backend });
      listener = listenTestApp(t);
    }, 60_000);
    afterAll(async () => {
      await listener?.stop();
      await t?.close();
    });

    const local = (url: string) => listener.socketUrl(url);

    async function publisher(bearer?: string) {
      const join = await t.call("/api/JoinPublisher", {}, { origin: null, bearer });
      expect(join.status).toBe(200);
      const pub = await LiveClient.open(local(join.body.websocketUrl));
      await pub.until(() => pub.texts.some((m) => m.includes('"ready"')), "publisher ready");
      let seq = 0;
      return {
        join: join.body,
        send: (paths: string[]) => pub.send({ type: "events", seq: ++seq, events: paths.map((p) => makeEvent({ http_req_path: p })) }),
        acks: () => pub.texts.filter((m) => m.includes('"ack"')).length,
        client: pub,
      };
    }

    test("an anonymous run's link: a late viewer sees earlier events, then live ones and the publisher count", async () => {
      const pub = await publisher();
      expect(pub.join.linkUrl).toStartWith(`${t.config.publicUrl}/link/`);
      pub.send(["/before-1", "/before-2"]);
      await pub.client.until(() => pub.acks() === 1, "ack");

      const linkUrl = (await t.call("/api/GetLink", { linkId: pub.join.linkId })).body.linkUrl;
      const viewer = await LiveClient.open(local(liveSocketUrl(linkUrl)!));
      await viewer.until(() => viewer.of("history").length === 1, "history");
      expect(viewer.of("history")[0]!.events.map((e) => e.http_req_path)).toEqual(["/before-1", "/before-2"]);
      expect(viewer.of("stats")[0]).toEqual({ type: "stats", numPublishers: 1, numSubscribers: 1 });

      pub.send(["/live"]);
      await viewer.until(() => viewer.paths().length === 1, "live event");
      expect(viewer.paths()).toEqual(["/live"]);
      pub.client.close();
      await viewer.until(() => viewer.of("stats").at(-1)?.numPublishers === 0, "publisher gone");
      viewer.close();
    });

    test("a token run reaches its namespace's live view only, and onboarding sees the publisher", async () => {
      const owner = await t.onboardedUser();
      const other = await t.onboardedUser();
      const token = await t.call("/api/GenerateNamespaceToken", { namespaceId: owner.namespaceId }, { cookie: owner.cookie });
      expect(token.status).toBe(200);
      const join = async (u: typeof owner) =>
        LiveClient.open(
          local((await t.call("/api/JoinSubscriber", { namespaceId: u.namespaceId }, { cookie: u.cookie })).body.websocketUrl),
        );
      const mine = await join(owner);
      const theirs = await join(other);
      mine.send({ type: "setConfig", revision: 1, filters: ['request.url startsWith "/keep"'] });
      await mine.until(() => mine.of("config-applied").length === 1, "config applied");

      const pub = await publisher(token.body.token);
      await mine.until(() => mine.of("stats").at(-1)?.numPublishers === 1, "publisher counted");
      pub.send(["/keep/1", "/drop", "/keep/2"]);
      await mine.until(() => mine.paths().length === 2, "filtered events");
      expect(mine.paths()).toEqual(["/keep/1", "/keep/2"]);
      await Bun.sleep(100);
      expect(theirs.paths()).toEqual([]);
      expect(theirs.of("stats").every((s) => s.numPublishers === 0)).toBe(true);

      // As onboarding does: poll until the publisher was recorded (it is written after the socket opened).
      let seen = await t.call("/api/HasSeenPublisher", { orgId: owner.orgId }, { cookie: owner.cookie });
      for (let i = 0; i < 50 && !seen.body.hasSeenPublisher; i++) {
        await Bun.sleep(100);
        seen = await t.call("/api/HasSeenPublisher", { orgId: owner.orgId }, { cookie: owner.cookie });
      }
      expect(seen.body).toEqual({ hasSeenPublisher: true });
      expect((await t.call("/api/HasSeenPublisher", { orgId: other.orgId }, { cookie: other.cookie })).body).toEqual({
        hasSeenPublisher: false,
      });
      pub.client.close();
      mine.close();
      theirs.close();
    });

    test("requests in flight reach the namespace's viewers whose filters they pass, until their events replace them", async () => {
      const owner = await t.onboardedUser();
      const other = await t.onboardedUser();
      const token = await t.call("/api/GenerateNamespaceToken", { namespaceId: owner.namespaceId }, { cookie: owner.cookie });
      const viewer = async (u: typeof owner, filters: string[]) => {
        const client = await LiveClient.open(
          local((await t.call("/api/JoinSubscriber", { namespaceId: u.namespaceId }, { cookie: u.cookie })).body.websocketUrl),
        );
        client.send({ type: "setConfig", revision: 1, filters });
        await client.until(() => client.of("config-applied").length === 1, "config applied");
        return client;
      };
      const all = await viewer(owner, []);
      const keep = await viewer(owner, ['request.url startsWith "/keep"']);
      const failing = await viewer(owner, ["response.status != 200"]);
      const theirs = await viewer(other, []);

      const pub = await publisher(token.body.token);
      expect(pub.client.texts.find((m) => m.includes('"ready"'))).toContain('"pending":true');
      const keepEvent = makeEvent({ http_req_path: "/keep/slow", http_req_method: "POST", http_resp_status_code: 200 });
      const dropEvent = makeEvent({ http_req_path: "/drop/slow", http_resp_status_code: 200 });
      const notice = (e: typeof keepEvent) => ({
        event_id: e.event_id,
        time: e.time,
        http_req_method: e.http_req_method,
        http_req_path: e.http_req_path,
        http_req_host: "api",
      });
      pub.client.send({
        type: "pending",
        seq: 1,
        requests: [notice(keepEvent), notice(dropEvent), { event_id: "not-an-id", time: 1, http_req_method: "GET" }],
      });
      await pub.client.until(() => pub.client.texts.some((m) => m.includes('"noted"')), "noted");
      expect(JSON.parse(pub.client.texts.find((m) => m.includes('"noted"'))!)).toEqual({
        type: "noted",
        seq: 1,
        accepted: 2,
        refused: 1,
        rateLimited: 0,
      });
      const pendingPaths = (c: LiveClient) => c.of("pending").flatMap((m) => m.requests.map((r) => r.http_req_path));
      await all.until(() => pendingPaths(all).length === 2, "both pending");
      await keep.until(() => pendingPaths(keep).length === 1, "the kept one pending");
      await failing.until(() => pendingPaths(failing).length === 2, "pending without a status yet");
      expect(pendingPaths(keep)).toEqual(["/keep/slow"]);
      expect(all.of("pending")[0]!.requests[0]).toMatchObject({
        event_id: keepEvent.event_id,
        http_req_method: "POST",
        http_req_host: "api",
      });
      // A viewer who opens Live while they wait is shown them too, as far as its filters pass them.
      const late = await viewer(owner, ['request.url startsWith "/keep"']);
      await late.until(() => late.of("pending").length >= 2, "the pending requests on join, then for its filter");
      expect(late.of("pending").map((m) => m.requests.map((r) => r.http_req_path))).toEqual([["/keep/slow", "/drop/slow"], ["/keep/slow"]]);

      // The events end them: shown where they match; a viewer whose filter the event fails is told to drop the row.
      pub.client.send({ type: "events", seq: 2, events: [keepEvent, dropEvent] });
      await all.until(() => all.paths().length === 2, "the events");
      await failing.until(() => failing.of("settled").length === 2, "settled");
      expect(
        failing
          .of("settled")
          .flatMap((m) => m.eventIds)
          .sort(),
      ).toEqual([keepEvent.event_id, dropEvent.event_id].sort());
      expect(failing.paths()).toEqual([]);
      expect(all.of("settled")).toEqual([]);
      await keep.until(() => keep.paths().length === 1, "the kept event");
      expect(keep.of("settled")).toEqual([]);
      // Another namespace's viewer never hears of them; once ended, a new viewer gets the events, not the notices.
      expect(theirs.of("pending")).toEqual([]);
      expect(theirs.paths()).toEqual([]);
      const after = await viewer(owner, []);
      expect(after.of("history").flatMap((m) => m.events.map((e) => e.http_req_path))).toEqual(["/keep/slow", "/drop/slow"]);
      expect(after.of("pending")).toEqual([]);
      for (const c of [pub.client, all, keep, failing, theirs, late, after]) c.close();
    });
  });
}
