import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { and, eq } from "drizzle-orm";
import { invitations, memberships, namespaceMembers } from "#db/schema/index.ts";
import { openDuckDbStore } from "~/store/duckdb.ts";
import type { SqlEventStore } from "~/store/sql-store.ts";
import { backends, startTestApp, type TestApp } from "../../support/app.ts";
import { sampleEvent } from "../../support/publish-server.ts";
import { startSmtpServer } from "../../support/smtp.ts";

type Person = Awaited<ReturnType<TestApp["user"]>>;

for (const backend of backends) {
  describe(`users, invitations and taking access back [${backend}]`, () => {
    let t: TestApp;
    let smtp: Awaited<ReturnType<typeof startSmtpServer>>;
    let dataDir: string;
    let store: SqlEventStore;
    beforeAll(async () => {
      smtp = await startSmtpServer();
      dataDir = mkdtempSync(join(tmpdir(), "tapscope-users-"));
      store = await openDuckDbStore({ path: join(dataDir, "events.duckdb") });
      t = await startTestApp({ backend, env: { SMTP_URL: smtp.url }, store });
    }, 60_000);
    afterAll(async () => {
      await t.close();
      await store.close();
      await smtp.close();
      rmSync(dataDir, { recursive: true, force: true });
    });

    const usersOf = async (admin: { cookie: string; namespaceId: string }) =>
      (await t.call("/api/ListUsers", { namespaceId: admin.namespaceId }, { cookie: admin.cookie })).body.users as Array<{
        userId: string | null;
        email: string;
        isPending: boolean;
        invitationId: string | null;
        hasWrite: boolean;
      }>;
    const myInvitations = async (who: Person) =>
      (await t.call("/api/ListMyInvitations", {}, { cookie: who.cookie })).body.invitations as Array<{
        invitationId: string;
        namespaceId: string;
        namespaceName: string;
        orgId: string;
        invitedByEmail: string | null;
      }>;
    const orgsOf = async (who: Person) =>
      ((await t.call("/api/ListOrgs", {}, { cookie: who.cookie })).body.orgs as Array<{ orgId: string }>).map((o) => o.orgId);
    const mailsTo = (address: string) => smtp.messages.filter((m) => m.to.includes(address)).length;

    async function makeAdmin(namespaceId: string, userId: string) {
      await t.db
        .update(namespaceMembers)
        .set({ hasWrite: true })
        .where(and(eq(namespaceMembers.namespaceId, namespaceId), eq(namespaceMembers.userId, userId)));
    }

    async function mailArrives(address: string) {
      await smtp.waitFor(address);
    }

    test("inviting an existing account adds nobody: they see the invitation, and only accepting makes them a member", async () => {
      const admin = await t.onboardedUser();
      const bob = await t.onboardedUser();
      const add = await t.call(
        "/api/AddUser",
        { namespaceId: admin.namespaceId, email: bob.email.toUpperCase() },
        { cookie: admin.cookie },
      );
      expect([add.status, add.body]).toEqual([200, { isPending: true, delivery: "email" }]);
      await mailArrives(bob.email);

      // Not a member yet: the org is not Bob's, its namespace answers as unknown.
      expect(await orgsOf(bob)).toEqual([bob.orgId]);
      expect((await t.call("/api/ListUsers", { namespaceId: admin.namespaceId }, { cookie: bob.cookie })).status).toBe(404);
      const pending = (await usersOf(admin)).find((u) => u.email === bob.email);
      expect(pending).toMatchObject({ userId: null, isPending: true, hasWrite: false, invitationId: expect.any(String) });

      const [invitation] = await myInvitations(bob);
      expect(invitation).toMatchObject({ namespaceId: admin.namespaceId, orgId: admin.orgId, invitedByEmail: admin.email });
      t.clock.advance(60_000);
      const accepted = await t.call("/api/AcceptInvitation", { invitationId: invitation!.invitationId }, { cookie: bob.cookie });
      expect(accepted.status).toBe(200);
      expect(accepted.body).toEqual({
        namespace: { namespaceId: admin.namespaceId, name: expect.any(String) },
        org: { orgId: admin.orgId },
      });

      expect(await orgsOf(bob)).toEqual([bob.orgId, admin.orgId]);
      expect(await usersOf(admin)).toEqual([
        { userId: admin.userId, email: admin.email, joinTime: expect.any(String), hasWrite: true, isPending: false, invitationId: null },
        {
          userId: bob.userId,
          email: bob.email,
          joinTime: t.clock.now().toISOString(),
          hasWrite: false,
          isPending: false,
          invitationId: null,
        },
      ] as never);
      expect(await myInvitations(bob)).toEqual([]);
      // Accepting twice, or inviting a member again, changes nothing and mails nothing.
      expect((await t.call("/api/AcceptInvitation", { invitationId: invitation!.invitationId }, { cookie: bob.cookie })).status).toBe(404);
      const mails = mailsTo(bob.email);
      expect((await t.call("/api/AddUser", { namespaceId: admin.namespaceId, email: bob.email }, { cookie: admin.cookie })).body).toEqual({
        isPending: false,
      });
      expect(await usersOf(admin)).toHaveLength(2);
      expect(mailsTo(bob.email)).toBe(mails);
    });

    test("an address without an account: signing in joins nothing; the person accepts on the dashboard", async () => {
      const admin = await t.onboardedUser();
      const email = `new-${crypto.randomUUID().slice(0, 6)}@example.com`;
      expect((await t.call("/api/AddUser", { namespaceId: admin.namespaceId, email }, { cookie: admin.cookie })).body).toEqual({
        isPending: true,
        delivery: "email",
      });
      const invited = await t.user(email); // signs in (the same path as the sign-in routes)
      expect(await orgsOf(invited)).toEqual([]);
      const [invitation] = await myInvitations(invited);
      expect(invitation?.namespaceId).toBe(admin.namespaceId);
      expect((await t.call("/api/AcceptInvitation", { invitationId: invitation!.invitationId }, { cookie: invited.cookie })).status).toBe(
        200,
      );
      expect(await orgsOf(invited)).toEqual([admin.orgId]);
      const [row] = await t.db.select().from(invitations).where(eq(invitations.email, email));
      expect(row!.acceptedAt).not.toBeNull();
      // An invited member is not an org admin: no namespace creation.
      expect((await t.call("/api/CreateNamespace", { orgId: admin.orgId, name: "mine" }, { cookie: invited.cookie })).status).toBe(403);
    });

    test("declining: the invitation is gone, the person stays out, and the admin may invite them again", async () => {
      const admin = await t.onboardedUser();
      const carol = await t.onboardedUser();
      await t.call("/api/AddUser", { namespaceId: admin.namespaceId, email: carol.email }, { cookie: admin.cookie });
      const [invitation] = await myInvitations(carol);
      expect((await t.call("/api/DeclineInvitation", { invitationId: invitation!.invitationId }, { cookie: carol.cookie })).status).toBe(
        200,
      );
      expect(await myInvitations(carol)).toEqual([]);
      expect(await orgsOf(carol)).toEqual([carol.orgId]);
      expect((await usersOf(admin)).map((u) => u.email)).toEqual([admin.email]);
      expect((await t.call("/api/AddUser", { namespaceId: admin.namespaceId, email: carol.email }, { cookie: admin.cookie })).body).toEqual(
        {
          isPending: true,
          delivery: "email",
        },
      );
      expect(await myInvitations(carol)).toHaveLength(1);
    });

    test("an invitation is only its addressee's to answer; others get 404 and it stays", async () => {
      const admin = await t.onboardedUser();
      const dave = await t.user();
      const eve = await t.onboardedUser();
      await t.call("/api/AddUser", { namespaceId: admin.namespaceId, email: dave.email }, { cookie: admin.cookie });
      const [invitation] = await myInvitations(dave);
      for (const path of ["/api/AcceptInvitation", "/api/DeclineInvitation"]) {
        const other = await t.call(path, { invitationId: invitation!.invitationId }, { cookie: eve.cookie });
        const unknown = await t.call(path, { invitationId: crypto.randomUUID() }, { cookie: eve.cookie });
        expect(other.status).toBe(404);
        expect(other.body).toEqual(unknown.body);
        expect((await t.call(path, { invitationId: "not-a-uuid" }, { cookie: eve.cookie })).status).toBe(404);
      }
      // The inviting admin cannot accept it for them either.
      expect((await t.call("/api/AcceptInvitation", { invitationId: invitation!.invitationId }, { cookie: admin.cookie })).status).toBe(
        404,
      );
      expect(await orgsOf(eve)).toEqual([eve.orgId]);
      expect(await myInvitations(dave)).toHaveLength(1);
    });

    test("a member cannot invite; a stranger learns nothing; bad addresses are refused", async () => {
      const admin = await t.onboardedUser();
      const member = await t.user();
      await t.addMember(admin, member);
      const refused = await t.call("/api/AddUser", { namespaceId: admin.namespaceId, email: "x@example.com" }, { cookie: member.cookie });
      expect(refused.status).toBe(403);
      expect(refused.body.error).toBe("You do not have permissions to invite users to this namespace.");

      const stranger = await t.onboardedUser();
      for (const path of ["/api/ListUsers", "/api/AddUser"]) {
        const foreign = await t.call(path, { namespaceId: admin.namespaceId, email: "y@example.com" }, { cookie: stranger.cookie });
        const unknown = await t.call(path, { namespaceId: crypto.randomUUID(), email: "y@example.com" }, { cookie: stranger.cookie });
        expect(foreign.status).toBe(404);
        expect(foreign.body).toEqual(unknown.body);
      }
      const invalid = await t.call("/api/AddUser", { namespaceId: admin.namespaceId, email: "nope" }, { cookie: admin.cookie });
      expect(invalid.status).toBe(400);
      expect((await usersOf(admin)).map((u) => u.email).sort()).toEqual([admin.email, member.email].sort());
    });

    test("invitation mails are limited per inviting user (20 at once) and per org (50): then 429, nothing stored, nothing sent", async () => {
      const admin = await t.onboardedUser();
      const tag = crypto.randomUUID().slice(0, 6);
      const invite = (by: { cookie: string; namespaceId: string }, i: number) =>
        t.call("/api/AddUser", { namespaceId: by.namespaceId, email: `flood-${tag}-${i}@example.com` }, { cookie: by.cookie });
      // Three more admins of the org: three invitations of the admin's 20, and of the org's 50.
      const others: Array<Person & { namespaceId: string }> = [];
      for (let i = 0; i < 3; i++) {
        const other = { ...(await t.user()), namespaceId: admin.namespaceId };
        await t.addMember(admin, other);
        await makeAdmin(admin.namespaceId, other.userId);
        others.push(other);
      }
      const [second, third, fourth] = others as [
        Person & { namespaceId: string },
        Person & { namespaceId: string },
        Person & { namespaceId: string },
      ];

      const statuses: number[] = [];
      for (let i = 0; i < 18; i++) statuses.push((await invite(admin, i)).status);
      expect(statuses).toEqual([...Array(17).fill(200), 429]);
      const limited = await invite(admin, 99);
      expect(limited.status).toBe(429);
      expect(limited.body.error).toBe("too many invitations sent; wait a while before inviting more people");
      expect(Number(limited.headers.get("retry-after"))).toBeGreaterThan(0);
      expect((await usersOf(admin)).filter((u) => u.email.startsWith(`flood-${tag}-`))).toHaveLength(17);
      await smtp.waitFor(`flood-${tag}-16@example.com`);
      await Bun.sleep(200);
      expect(mailsTo(`flood-${tag}-17@example.com`) + mailsTo(`flood-${tag}-99@example.com`)).toBe(0);
      // Inviting an address already invited costs nothing: no mail, no budget.
      expect((await invite(admin, 3)).body).toEqual({ isPending: true });
      expect(mailsTo(`flood-${tag}-3@example.com`)).toBe(1);

      // The other admins share the org's 50: 20 sent so far, 20 more by one, 10 by another, then nobody.
      const byOthers: number[] = [];
      for (let i = 100; i < 120; i++) byOthers.push((await invite(second, i)).status);
      for (let i = 120; i < 131; i++) byOthers.push((await invite(third, i)).status);
      expect(byOthers).toEqual([...Array(30).fill(200), 429]);
      expect((await invite(fourth, 200)).status).toBe(429);
      // Another org is not affected; an hour later the org may send again.
      const elsewhere = await t.onboardedUser();
      expect((await invite(elsewhere, 300)).status).toBe(200);
      t.clock.advance(60 * 60 * 1000);
      expect((await invite(fourth, 201)).status).toBe(200);
    });

    test("an admin removes a member: out of the namespace and, with no other namespace there, out of the org", async () => {
      const admin = await t.onboardedUser();
      const member = await t.onboardedUser();
      await t.addMember(admin, member);
      const removed = await t.call("/api/RemoveUser", { namespaceId: admin.namespaceId, userId: member.userId }, { cookie: admin.cookie });
      expect([removed.status, removed.body]).toEqual([200, { deletedTokens: 0 }]);
      expect((await usersOf(admin)).map((u) => u.email)).toEqual([admin.email]);
      expect((await t.call("/api/ListUsers", { namespaceId: admin.namespaceId }, { cookie: member.cookie })).status).toBe(404);
      expect(await orgsOf(member)).toEqual([member.orgId]);
      // Removing again: not a member. Inviting again works (and waits for their answer again).
      expect(
        (await t.call("/api/RemoveUser", { namespaceId: admin.namespaceId, userId: member.userId }, { cookie: admin.cookie })).status,
      ).toBe(404);
      expect(
        (await t.call("/api/AddUser", { namespaceId: admin.namespaceId, email: member.email }, { cookie: admin.cookie })).body,
      ).toEqual({
        isPending: true,
        delivery: "email",
      });
      expect((await myInvitations(member)).map((i) => i.namespaceId)).toEqual([admin.namespaceId]);
      expect(await orgsOf(member)).toEqual([member.orgId]);
    });

    test("a member in two namespaces of the org keeps the org when removed from one", async () => {
      const admin = await t.onboardedUser();
      const second = await t.call("/api/CreateNamespace", { orgId: admin.orgId, name: "second" }, { cookie: admin.cookie });
      const member = await t.user();
      await t.addMember(admin, member);
      await t.addMember(admin, member, second.body.namespaceId);
      await t.call("/api/RemoveUser", { namespaceId: admin.namespaceId, userId: member.userId }, { cookie: admin.cookie });
      expect(await orgsOf(member)).toEqual([admin.orgId]);
      const list = await t.call("/api/ListNamespaces", { orgId: admin.orgId }, { cookie: member.cookie });
      expect(list.body.namespaces.map((n: { namespaceId: string }) => n.namespaceId)).toEqual([second.body.namespaceId]);
    });

    test("removing an admin may delete the tokens they created (they saw each once); without it the tokens keep working", async () => {
      const owner = await t.onboardedUser();
      const kept = await t.user();
      const gone = await t.user();
      for (const admin of [kept, gone]) {
        await t.addMember(owner, admin);
        await makeAdmin(owner.namespaceId, admin.userId);
      }
      const tokenOf = async (who: Person) =>
        (await t.call("/api/GenerateNamespaceToken", { namespaceId: owner.namespaceId }, { cookie: who.cookie })).body.token as string;
      const [keptToken, goneToken, ownerToken] = [await tokenOf(kept), await tokenOf(gone), await tokenOf(owner)];
      const joins = async (token: string) => (await t.call("/api/JoinPublisher", {}, { bearer: token })).status;

      const withTokens = await t.call(
        "/api/RemoveUser",
        { namespaceId: owner.namespaceId, userId: gone.userId, deleteTokens: true },
        { cookie: owner.cookie },
      );
      expect(withTokens.body).toEqual({ deletedTokens: 1 });
      const without = await t.call("/api/RemoveUser", { namespaceId: owner.namespaceId, userId: kept.userId }, { cookie: owner.cookie });
      expect(without.body).toEqual({ deletedTokens: 0 });
      expect([await joins(goneToken), await joins(keptToken), await joins(ownerToken)]).toEqual([401, 200, 200]);
    });

    test("the last admin stays; an admin may leave while another remains; a member may leave but not remove others", async () => {
      const owner = await t.onboardedUser();
      const member = await t.user();
      const other = await t.user();
      await t.addMember(owner, member);
      await t.addMember(owner, other);

      const last = await t.call("/api/RemoveUser", { namespaceId: owner.namespaceId, userId: owner.userId }, { cookie: owner.cookie });
      expect(last.status).toBe(409);
      expect(last.body.error).toStartWith("A namespace needs at least one admin");

      const notAllowed = await t.call(
        "/api/RemoveUser",
        { namespaceId: owner.namespaceId, userId: other.userId },
        { cookie: member.cookie },
      );
      expect([notAllowed.status, notAllowed.body.error]).toEqual([403, "You do not have permissions to remove users from this namespace."]);
      const left = await t.call("/api/RemoveUser", { namespaceId: owner.namespaceId, userId: member.userId }, { cookie: member.cookie });
      expect(left.status).toBe(200);
      expect((await usersOf(owner)).map((u) => u.email).sort()).toEqual([owner.email, other.email].sort());

      await makeAdmin(owner.namespaceId, other.userId);
      expect(
        (await t.call("/api/RemoveUser", { namespaceId: owner.namespaceId, userId: owner.userId }, { cookie: owner.cookie })).status,
      ).toBe(200);
      expect((await t.call("/api/ListUsers", { namespaceId: owner.namespaceId }, { cookie: owner.cookie })).status).toBe(404);
      const lastAgain = await t.call("/api/RemoveUser", { namespaceId: owner.namespaceId, userId: other.userId }, { cookie: other.cookie });
      expect(lastAgain.status).toBe(409);
    });

    test("two admins removing each other at once leave one admin, never none", async () => {
      const owner = await t.onboardedUser();
      const other = await t.user();
      await t.addMember(owner, other);
      await makeAdmin(owner.namespaceId, other.userId);
      const [a, b] = await Promise.all([
        t.call("/api/RemoveUser", { namespaceId: owner.namespaceId, userId: other.userId }, { cookie: owner.cookie }),
        t.call("/api/RemoveUser", { namespaceId: owner.namespaceId, userId: owner.userId }, { cookie: other.cookie }),
      ]);
      // The one that came second was no longer a member (404), or no longer an admin once it had the lock (403).
      const [first, second] = [a.status, b.status].sort();
      expect(first).toBe(200);
      expect([403, 404]).toContain(second!);
      const admins = await t.db.select().from(namespaceMembers).where(eq(namespaceMembers.namespaceId, owner.namespaceId));
      expect(admins.filter((m) => m.hasWrite)).toHaveLength(1);
    });

    test("revoking an invitation: the address can no longer accept it; members and strangers cannot revoke", async () => {
      const admin = await t.onboardedUser();
      const member = await t.user();
      await t.addMember(admin, member);
      const invitee = await t.user();
      await t.call("/api/AddUser", { namespaceId: admin.namespaceId, email: invitee.email }, { cookie: admin.cookie });
      const invitationId = (await usersOf(admin)).find((u) => u.email === invitee.email)?.invitationId;
      expect(invitationId).toBeString();

      const byMember = await t.call("/api/RevokeInvitation", { invitationId }, { cookie: member.cookie });
      expect([byMember.status, byMember.body.error]).toEqual([403, "You do not have permissions to revoke invitations to this namespace."]);
      const stranger = await t.onboardedUser();
      const foreign = await t.call("/api/RevokeInvitation", { invitationId }, { cookie: stranger.cookie });
      const unknown = await t.call("/api/RevokeInvitation", { invitationId: crypto.randomUUID() }, { cookie: stranger.cookie });
      expect(foreign.status).toBe(404);
      expect(foreign.body).toEqual(unknown.body);

      expect((await t.call("/api/RevokeInvitation", { invitationId }, { cookie: admin.cookie })).status).toBe(200);
      expect((await usersOf(admin)).map((u) => u.email)).not.toContain(invitee.email);
      expect(await myInvitations(invitee)).toEqual([]);
      expect((await t.call("/api/AcceptInvitation", { invitationId }, { cookie: invitee.cookie })).status).toBe(404);
      expect(await orgsOf(invitee)).toEqual([]);
      expect((await t.call("/api/RevokeInvitation", { invitationId }, { cookie: admin.cookie })).status).toBe(404);
    });

    test("an admin signs a member out everywhere: every session of theirs ends; the admin's stay; members cannot", async () => {
      const admin = await t.onboardedUser();
      const member = await t.user();
      await t.addMember(admin, member);
      const elsewhere = await t.user(member.email); // the same person on another device
      const self = (cookie: string) => t.request("/api/GetSelf", { headers: { cookie } }).then((r) => r.status);

      const byMember = await t.call(
        "/api/EndUserSessions",
        { namespaceId: admin.namespaceId, userId: admin.userId },
        { cookie: member.cookie },
      );
      expect([byMember.status, byMember.body.error]).toEqual([403, "You do not have permissions to sign out users of this namespace."]);
      const stranger = await t.onboardedUser();
      expect(
        (await t.call("/api/EndUserSessions", { namespaceId: admin.namespaceId, userId: stranger.userId }, { cookie: admin.cookie }))
          .status,
      ).toBe(404);
      expect(await self(stranger.cookie)).toBe(200);

      const ended = await t.call(
        "/api/EndUserSessions",
        { namespaceId: admin.namespaceId, userId: member.userId },
        { cookie: admin.cookie },
      );
      expect([ended.status, ended.body]).toEqual([200, { endedSessions: 2 }]);
      expect([await self(member.cookie), await self(elsewhere.cookie), await self(admin.cookie)]).toEqual([401, 401, 200]);
      // Still a member: signing in again works (removing them is what keeps them out).
      expect((await usersOf(admin)).map((u) => u.email)).toContain(member.email);
    });

    test("deleting a namespace: gone for everyone with its tokens, events and invitations; its members leave the org when it was their last there", async () => {
      const admin = await t.onboardedUser();
      const doomed = (await t.call("/api/CreateNamespace", { orgId: admin.orgId, name: "doomed" }, { cookie: admin.cookie })).body
        .namespaceId as string;
      const onlyThere = await t.user();
      const alsoElsewhere = await t.user();
      await t.addMember(admin, onlyThere, doomed);
      await t.addMember(admin, alsoElsewhere, doomed);
      await t.addMember(admin, alsoElsewhere);
      const invitee = await t.user();
      await t.call("/api/AddUser", { namespaceId: doomed, email: invitee.email }, { cookie: admin.cookie });
      const token = (await t.call("/api/GenerateNamespaceToken", { namespaceId: doomed }, { cookie: admin.cookie })).body.token as string;
      await store.insert(doomed, [sampleEvent()]);
      expect(await store.listNamespaces()).toContain(doomed);

      const byMember = await t.call("/api/DeleteNamespace", { namespaceId: doomed }, { cookie: onlyThere.cookie });
      expect([byMember.status, byMember.body.error]).toEqual([403, "You do not have permissions to delete this namespace."]);
      const stranger = await t.onboardedUser();
      expect((await t.call("/api/DeleteNamespace", { namespaceId: doomed }, { cookie: stranger.cookie })).status).toBe(404);

      expect((await t.call("/api/DeleteNamespace", { namespaceId: doomed }, { cookie: admin.cookie })).status).toBe(200);
      const names = (await t.call("/api/ListNamespaces", { orgId: admin.orgId }, { cookie: admin.cookie })).body.namespaces;
      expect(names.map((n: { namespaceId: string }) => n.namespaceId)).toEqual([admin.namespaceId]);
      expect((await t.call("/api/ListUsers", { namespaceId: doomed }, { cookie: admin.cookie })).status).toBe(404);
      expect((await t.call("/api/JoinPublisher", {}, { bearer: token })).status).toBe(401);
      expect(await store.listNamespaces()).not.toContain(doomed);
      expect(await myInvitations(invitee)).toEqual([]);
      expect(await orgsOf(onlyThere)).toEqual([]);
      expect(await orgsOf(alsoElsewhere)).toEqual([admin.orgId]);
      const left = await t.db.select().from(memberships).where(eq(memberships.orgId, admin.orgId));
      expect(left.map((m) => m.userId).sort()).toEqual([admin.userId, alsoElsewhere.userId].sort());
    });

    test("an org's last namespace cannot be deleted: 409 with what to do, and nothing changes", async () => {
      const admin = await t.onboardedUser();
      const res = await t.call("/api/DeleteNamespace", { namespaceId: admin.namespaceId }, { cookie: admin.cookie });
      expect([res.status, res.body.error]).toEqual([
        409,
        "An organization keeps at least one namespace: create another one before deleting this one.",
      ]);
      expect((await usersOf(admin)).map((u) => u.email)).toEqual([admin.email]);
      // Two namespaces deleted at once: one of them stays.
      const second = (await t.call("/api/CreateNamespace", { orgId: admin.orgId, name: "two" }, { cookie: admin.cookie })).body.namespaceId;
      const both = await Promise.all(
        [admin.namespaceId, second].map((namespaceId) => t.call("/api/DeleteNamespace", { namespaceId }, { cookie: admin.cookie })),
      );
      expect(both.map((r) => r.status).sort()).toEqual([200, 409]);
      expect((await t.call("/api/ListNamespaces", { orgId: admin.orgId }, { cookie: admin.cookie })).body.namespaces).toHaveLength(1);
    });
  });
}
