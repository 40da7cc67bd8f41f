import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { and, eq } from "drizzle-orm";
import { namespaceMembers, namespaces } from "#db/schema/index.ts";
import { SESSION_TTL_MS } from "~/services/auth/session-token.ts";
import { backends, listenTestApp, startTestApp, type TestApp } from "../../support/app.ts";
import { LiveClient } from "../../support/live-client.ts";

/**
 * Revoking a credential closes the sockets it authorised (issue 14, item 4): deleting a token, signing out or
 * losing membership ends the publish socket, tunnels, worker and live view within a second, and the same
 * credential cannot open them again. Every call goes to the one listening app, as a browser's would.
 */
for (const backend of backends) {
  describe(`revocation reaches open sockets [${backend}]`, () => {
    let t: TestApp;
    let listener: ReturnType<typeof listenTestApp>;
    let base: string;

    beforeAll(async () => {
      t = await startTestApp({ backend });
      listener = listenTestApp(t);
      base = listener.base;
    }, 60_000);
    afterAll(async () => {
      await listener?.stop();
      await t?.close();
    });

    async function call(path: string, body: unknown, opts: { cookie?: string; bearer?: string } = {}) {
      const headers: Record<string, string> = { "content-type": "application/json", origin: t.config.publicUrl };
      if (opts.cookie) headers.cookie = opts.cookie;
      if (opts.bearer) headers.authorization = `Bearer ${opts.bearer}`;
      const res = await fetch(base + path, { method: "POST", headers, body: JSON.stringify(body) });
      const text = await res.text();
      return { status: res.status, body: text ? JSON.parse(text) : undefined };
    }

    const local = (url: string) => listener.socketUrl(url);

    async function open(url: string, headers?: Record<string, string>): Promise<LiveClient> {
      const ws = new WebSocket(local(url), headers ? ({ headers } as unknown as string[]) : undefined);
      ws.binaryType = "arraybuffer";
      const client = new LiveClient(ws);
      await new Promise<void>((resolve, reject) => {
        ws.addEventListener("open", () => resolve());
        ws.addEventListener("error", () => reject(new Error(`websocket refused: ${url}`)));
      });
      return client;
    }

    async function closedWithinASecond(client: LiveClient, what: string): Promise<void> {
      const started = Date.now();
      await client.until(() => client.closeCode !== null, what, 1000);
      expect(client.closeCode).toBe(4401);
      expect(Date.now() - started).toBeLessThan(1000);
    }

    async function tunnel(role: "SELECT" | "INSERT", opts: { cookie?: string; bearer?: string }, namespaceId?: string) {
      const res = await call("/api/CreateTunnel", { namespaceId, role }, opts);
      expect(res.status).toBe(200);
      return open(res.body.endpoint);
    }

    async function namespaceToken(owner: { cookie: string; namespaceId: string }) {
      const gen = await call("/api/GenerateNamespaceToken", { namespaceId: owner.namespaceId }, { cookie: owner.cookie });
      expect(gen.status).toBe(200);
      return gen.body as { token: string; tokenId: string };
    }

    test("deleting a namespace token closes its publish socket and its SELECT and INSERT tunnels", async () => {
      const owner = await t.onboardedUser();
      const token = await namespaceToken(owner);
      const join = await call("/api/JoinPublisher", {}, { bearer: token.token });
      expect(join.status).toBe(200);
      const publisher = await open(join.body.websocketUrl);
      await publisher.until(() => publisher.texts.some((m) => m.includes('"ready"')), "publisher ready");
      const select = await tunnel("SELECT", { bearer: token.token });
      const insert = await tunnel("INSERT", { bearer: token.token });

      expect((await call("/api/DeleteNamespaceToken", { tokenId: token.tokenId }, { cookie: owner.cookie })).status).toBe(200);
      await Promise.all([
        closedWithinASecond(publisher, "publish socket closed"),
        closedWithinASecond(select, "SELECT tunnel closed"),
        closedWithinASecond(insert, "INSERT tunnel closed"),
      ]);
      expect((await call("/api/JoinPublisher", {}, { bearer: token.token })).status).toBe(401);
      expect((await call("/api/CreateTunnel", { role: "SELECT" }, { bearer: token.token })).status).toBe(401);
    });

    test("a ticket issued before its token was deleted opens a socket that closes at once", async () => {
      const owner = await t.onboardedUser();
      const token = await namespaceToken(owner);
      const join = await call("/api/JoinPublisher", {}, { bearer: token.token });
      expect((await call("/api/DeleteNamespaceToken", { tokenId: token.tokenId }, { cookie: owner.cookie })).status).toBe(200);
      const publisher = await open(join.body.websocketUrl).catch(() => null);
      if (publisher) await closedWithinASecond(publisher, "late publish socket closed");
    });

    test("deleting an org token sends its worker and its tunnel away", async () => {
      const owner = await t.onboardedUser();
      const gen = await call("/api/GenerateOrgToken", { orgId: owner.orgId }, { cookie: owner.cookie });
      expect(gen.status).toBe(200);
      const worker = await open(`${t.config.publicUrl}/api/WorkerConnect`, { authorization: `Bearer ${gen.body.token}` });
      await worker.until(() => worker.texts.some((m) => m.includes('"ready"')), "worker ready");
      const select = await tunnel("SELECT", { bearer: gen.body.token }, owner.namespaceId);

      expect((await call("/api/DeleteOrgToken", { tokenId: gen.body.tokenId }, { cookie: owner.cookie })).status).toBe(200);
      await Promise.all([closedWithinASecond(worker, "worker closed"), closedWithinASecond(select, "org token tunnel closed")]);
      expect((await call("/api/CreateTunnel", { namespaceId: owner.namespaceId, role: "SELECT" }, { bearer: gen.body.token })).status).toBe(
        401,
      );
      await expect(open(`${t.config.publicUrl}/api/WorkerConnect`, { authorization: `Bearer ${gen.body.token}` })).rejects.toThrow();
    });

    test("signing out closes the session's live socket and tunnel; another session's stay open", async () => {
      const owner = await t.onboardedUser();
      const live = await open(
        (await call("/api/JoinSubscriber", { namespaceId: owner.namespaceId }, { cookie: owner.cookie })).body.websocketUrl,
      );
      await live.until(() => live.of("history").length === 1, "live history");
      const select = await tunnel("SELECT", { cookie: owner.cookie }, owner.namespaceId);
      const insert = await tunnel("INSERT", { cookie: owner.cookie }, owner.namespaceId);
      // The same person signed in elsewhere keeps that session's socket.
      const elsewhere = await t.user(owner.email);
      const otherLive = await open(
        (await call("/api/JoinSubscriber", { namespaceId: owner.namespaceId }, { cookie: elsewhere.cookie })).body.websocketUrl,
      );

      const logout = await fetch(`${base}/api/LogOut`, { headers: { cookie: owner.cookie }, redirect: "manual" });
      expect(logout.status).toBe(302);
      await Promise.all([
        closedWithinASecond(live, "live socket closed"),
        closedWithinASecond(select, "SELECT tunnel closed"),
        closedWithinASecond(insert, "INSERT tunnel closed"),
      ]);
      expect((await call("/api/JoinSubscriber", { namespaceId: owner.namespaceId }, { cookie: owner.cookie })).status).toBe(401);
      expect((await call("/api/CreateTunnel", { namespaceId: owner.namespaceId, role: "SELECT" }, { cookie: owner.cookie })).status).toBe(
        401,
      );
      await Bun.sleep(700);
      expect(otherLive.closeCode).toBeNull();
      otherLive.close();
    });

    test("a member removed from a namespace stops watching it", async () => {
      const owner = await t.onboardedUser();
      const member = await t.user();
      await t.addMember(owner, member);
      const live = await open(
        (await call("/api/JoinSubscriber", { namespaceId: owner.namespaceId }, { cookie: member.cookie })).body.websocketUrl,
      );
      await live.until(() => live.of("history").length === 1, "live history");
      const select = await tunnel("SELECT", { cookie: member.cookie }, owner.namespaceId);
      await Bun.sleep(100); // past the check made as the sockets opened: the periodic one must find it

      await t.db
        .delete(namespaceMembers)
        .where(and(eq(namespaceMembers.namespaceId, owner.namespaceId), eq(namespaceMembers.userId, member.userId)));
      await Promise.all([closedWithinASecond(live, "live socket closed"), closedWithinASecond(select, "tunnel closed")]);
      expect((await call("/api/JoinSubscriber", { namespaceId: owner.namespaceId }, { cookie: member.cookie })).status).toBe(404);
    });

    test("RemoveUser closes the removed member's live view and tunnels at once; the admin's stay open", async () => {
      const owner = await t.onboardedUser();
      const member = await t.user();
      await t.addMember(owner, member);
      const live = await open(
        (await call("/api/JoinSubscriber", { namespaceId: owner.namespaceId }, { cookie: member.cookie })).body.websocketUrl,
      );
      await live.until(() => live.of("history").length === 1, "live history");
      const select = await tunnel("SELECT", { cookie: member.cookie }, owner.namespaceId);
      const ownerLive = await open(
        (await call("/api/JoinSubscriber", { namespaceId: owner.namespaceId }, { cookie: owner.cookie })).body.websocketUrl,
      );
      await ownerLive.until(() => ownerLive.of("history").length === 1, "owner's live history");

      expect(
        (await call("/api/RemoveUser", { namespaceId: owner.namespaceId, userId: member.userId }, { cookie: owner.cookie })).status,
      ).toBe(200);
      await Promise.all([closedWithinASecond(live, "live socket closed"), closedWithinASecond(select, "tunnel closed")]);
      expect(live.closeReason).toBe("no longer a member of this namespace");
      expect((await call("/api/JoinSubscriber", { namespaceId: owner.namespaceId }, { cookie: member.cookie })).status).toBe(404);
      await Bun.sleep(700);
      expect(ownerLive.closeCode).toBeNull();
      ownerLive.close();
    });

    test("EndUserSessions closes every socket of the member's sessions, on every device", async () => {
      const owner = await t.onboardedUser();
      const member = await t.user();
      await t.addMember(owner, member);
      const other = await t.user(member.email);
      const sockets = await Promise.all(
        [member, other].map(async (who) =>
          open((await call("/api/JoinSubscriber", { namespaceId: owner.namespaceId }, { cookie: who.cookie })).body.websocketUrl),
        ),
      );
      const select = await tunnel("SELECT", { cookie: other.cookie }, owner.namespaceId);
      expect(
        (await call("/api/EndUserSessions", { namespaceId: owner.namespaceId, userId: member.userId }, { cookie: owner.cookie })).body,
      ).toEqual({
        endedSessions: 2,
      });
      await Promise.all([
        ...sockets.map((s) => closedWithinASecond(s, "live socket closed")),
        closedWithinASecond(select, "tunnel closed"),
      ]);
      expect(sockets[0]!.closeReason).toBe("signed out");
      expect((await call("/api/JoinSubscriber", { namespaceId: owner.namespaceId }, { cookie: member.cookie })).status).toBe(401);
    });

    test("DeleteNamespace stops its publisher, its viewers and an org token's tunnel on it at once", async () => {
      const owner = await t.onboardedUser();
      const doomed = (await call("/api/CreateNamespace", { orgId: owner.orgId, name: "doomed" }, { cookie: owner.cookie })).body
        .namespaceId;
      const member = await t.user();
      await t.addMember(owner, member, doomed);
      const token = await namespaceToken({ cookie: owner.cookie, namespaceId: doomed });
      const publisher = await open((await call("/api/JoinPublisher", {}, { bearer: token.token })).body.websocketUrl);
      await publisher.until(() => publisher.texts.some((m) => m.includes('"ready"')), "publisher ready");
      const viewer = await open((await call("/api/JoinSubscriber", { namespaceId: doomed }, { cookie: member.cookie })).body.websocketUrl);
      await viewer.until(() => viewer.of("history").length === 1, "live history");
      const orgToken = (await call("/api/GenerateOrgToken", { orgId: owner.orgId }, { cookie: owner.cookie })).body.token;
      const orgTunnel = await tunnel("SELECT", { bearer: orgToken }, doomed);
      const kept = await tunnel("SELECT", { bearer: orgToken }, owner.namespaceId);

      expect((await call("/api/DeleteNamespace", { namespaceId: doomed }, { cookie: owner.cookie })).status).toBe(200);
      await Promise.all([
        closedWithinASecond(publisher, "publish socket closed"),
        closedWithinASecond(viewer, "live socket closed"),
        closedWithinASecond(orgTunnel, "org token's tunnel closed"),
      ]);
      expect(orgTunnel.closeReason).toBe("namespace deleted");
      await Bun.sleep(700);
      expect(kept.closeCode).toBeNull();
      kept.close();
    });

    test("an org token's tunnel on a namespace deleted behind the server's back closes within the sweep", async () => {
      const owner = await t.onboardedUser();
      const doomed = (await call("/api/CreateNamespace", { orgId: owner.orgId, name: "gone" }, { cookie: owner.cookie })).body.namespaceId;
      const orgToken = (await call("/api/GenerateOrgToken", { orgId: owner.orgId }, { cookie: owner.cookie })).body.token;
      const orgTunnel = await tunnel("SELECT", { bearer: orgToken }, doomed);
      await Bun.sleep(100); // past the check made as the socket opened: the periodic one must find it
      await t.db.delete(namespaces).where(eq(namespaces.id, doomed));
      await closedWithinASecond(orgTunnel, "tunnel closed");
    });

    // Last: it moves the clock past every session made so far.
    test("a session that expires while its live socket is open ends the socket", async () => {
      const owner = await t.onboardedUser();
      const live = await open(
        (await call("/api/JoinSubscriber", { namespaceId: owner.namespaceId }, { cookie: owner.cookie })).body.websocketUrl,
      );
      await live.until(() => live.of("history").length === 1, "live history");
      await Bun.sleep(100);
      t.clock.advance(SESSION_TTL_MS + 1000);
      await closedWithinASecond(live, "live socket closed at session expiry");
    });
  });
}
