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
  });
}
