import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { eq } from "drizzle-orm";
import { namespaceTokens, orgTokens } from "#db/schema/index.ts";
import { sha256Hex } from "~/lib/server/ids.ts";
import { backends, startTestApp, type TestApp } from "../../support/app.ts";

const NS_TOKEN = /^tsk_[A-Za-z0-9_-]{43}$/;
const ORG_TOKEN = /^tso_[A-Za-z0-9_-]{43}$/;

for (const backend of backends) {
  describe(`tokens [${backend}]`, () => {
    let t: TestApp;
    beforeAll(async () => {
      t = await startTestApp({ backend });
    }, 60_000);
    afterAll(() => t.close());

    /** An admin's namespace plus a read-only member of it (invited by the admin). */
    async function teamWithMember() {
      const admin = await t.onboardedUser();
      const member = await t.user();
      await t.addMember(admin, member);
      return { admin, member };
    }

    test("an admin generates a namespace token shown once; the list shows it masked with creator and time", async () => {
      const admin = await t.onboardedUser();
      const gen = await t.call("/api/GenerateNamespaceToken", { namespaceId: admin.namespaceId }, { cookie: admin.cookie });
      expect(gen.status).toBe(200);
      expect(gen.body.token).toMatch(NS_TOKEN);
      expect(gen.headers.get("cache-control")).toBe("no-store");

      const list = await t.call("/api/ListNamespaceTokens", { namespaceId: admin.namespaceId }, { cookie: admin.cookie });
      expect(list.status).toBe(200);
      expect(list.body.tokens).toHaveLength(1);
      const [row] = list.body.tokens;
      expect(row.tokenId).toBe(gen.body.tokenId);
      expect(row.name).toBe(`tsk_...${gen.body.token.slice(-6)}`);
      expect(row.creatorEmail).toBe(admin.email);
      expect(new Date(row.createTime).getTime()).toBe(t.clock.now().getTime());
      expect(JSON.stringify(list.body)).not.toContain(gen.body.token);
    });

    test("a token whose creator's account is gone lists creatorEmail null", async () => {
      const admin = await t.onboardedUser();
      const gen = await t.call("/api/GenerateNamespaceToken", { namespaceId: admin.namespaceId }, { cookie: admin.cookie });
      // What deleting the creator leaves (the column is ON DELETE SET NULL): the token stays, its creator unknown.
      await t.db.update(namespaceTokens).set({ creatorUserId: null }).where(eq(namespaceTokens.id, gen.body.tokenId));
      const list = await t.call("/api/ListNamespaceTokens", { namespaceId: admin.namespaceId }, { cookie: admin.cookie });
      expect(list.status).toBe(200);
      expect(list.body.tokens).toEqual([expect.objectContaining({ tokenId: gen.body.tokenId, creatorEmail: null })]);
    });

    test("only the SHA-256 of a token is stored", async () => {
      const admin = await t.onboardedUser();
      const ns = await t.call("/api/GenerateNamespaceToken", { namespaceId: admin.namespaceId }, { cookie: admin.cookie });
      const org = await t.call("/api/GenerateOrgToken", { orgId: admin.orgId }, { cookie: admin.cookie });
      const [nsRow] = await t.db.select().from(namespaceTokens).where(eq(namespaceTokens.id, ns.body.tokenId));
      const [orgRow] = await t.db.select().from(orgTokens).where(eq(orgTokens.id, org.body.tokenId));
      expect(nsRow!.tokenHash).toBe(sha256Hex(ns.body.token));
      expect(orgRow!.tokenHash).toBe(sha256Hex(org.body.token));
      for (const [row, token] of [
        [nsRow, ns.body.token],
        [orgRow, org.body.token],
      ] as const) {
        const stored = JSON.stringify(row);
        expect(stored).not.toContain(token);
        expect(stored).not.toContain(token.slice(4, 20));
      }
    });

    test("a namespace token authenticates Bearer calls for its namespace only, and stops at once when deleted", async () => {
      const admin = await t.onboardedUser();
      const second = await t.call("/api/CreateNamespace", { orgId: admin.orgId, name: "second" }, { cookie: admin.cookie });
      const { token, tokenId } = (await t.call("/api/GenerateNamespaceToken", { namespaceId: admin.namespaceId }, { cookie: admin.cookie }))
        .body;

      const seen = await t.call("/api/ListNamespaces", { orgId: admin.orgId }, { bearer: token, origin: null });
      expect(seen.status).toBe(200);
      expect(seen.body.namespaces.map((n: { namespaceId: string }) => n.namespaceId)).toEqual([admin.namespaceId]);
      expect(seen.body.namespaces).not.toContainEqual(expect.objectContaining({ namespaceId: second.body.namespaceId }));

      // Tokens are not sessions: the management calls stay user-only (a valid token of the wrong kind: 403).
      expect(
        (await t.call("/api/GenerateNamespaceToken", { namespaceId: admin.namespaceId }, { bearer: token, origin: null })).status,
      ).toBe(403);
      expect((await t.request("/api/GetSelf", { headers: { authorization: `Bearer ${token}` } })).status).toBe(403);

      expect((await t.call("/api/DeleteNamespaceToken", { tokenId }, { cookie: admin.cookie })).status).toBe(200);
      expect((await t.call("/api/ListNamespaces", { orgId: admin.orgId }, { bearer: token, origin: null })).status).toBe(401);
      const list = await t.call("/api/ListNamespaceTokens", { namespaceId: admin.namespaceId }, { cookie: admin.cookie });
      expect(list.body.tokens).toEqual([]);
    });

    test("an org token sees every namespace of its org, not other orgs, and stops when deleted", async () => {
      const admin = await t.onboardedUser();
      await t.call("/api/CreateNamespace", { orgId: admin.orgId, name: "two" }, { cookie: admin.cookie });
      const other = await t.onboardedUser();
      const gen = await t.call("/api/GenerateOrgToken", { orgId: admin.orgId }, { cookie: admin.cookie });
      expect(gen.status).toBe(200);
      expect(gen.body.token).toMatch(ORG_TOKEN);
      const mine = await t.call("/api/ListNamespaces", { orgId: admin.orgId }, { bearer: gen.body.token, origin: null });
      expect(mine.body.namespaces).toHaveLength(2);
      expect((await t.call("/api/ListNamespaces", { orgId: other.orgId }, { bearer: gen.body.token, origin: null })).status).toBe(404);

      const list = await t.call("/api/ListOrgTokens", { orgId: admin.orgId }, { cookie: admin.cookie });
      expect(list.body.tokens).toEqual([
        {
          tokenId: gen.body.tokenId,
          createTime: expect.any(String),
          name: `tso_...${gen.body.token.slice(-6)}`,
          creatorEmail: admin.email,
          label: "",
          lastUsedTime: t.clock.now().toISOString(),
        },
      ]);
      expect((await t.call("/api/DeleteOrgToken", { tokenId: gen.body.tokenId }, { cookie: admin.cookie })).status).toBe(200);
      expect((await t.call("/api/ListNamespaces", { orgId: admin.orgId }, { bearer: gen.body.token, origin: null })).status).toBe(401);
      expect((await t.call("/api/ListOrgTokens", { orgId: admin.orgId }, { cookie: admin.cookie })).body.tokens).toEqual([]);
    });

    test("lists are newest first", async () => {
      const admin = await t.onboardedUser();
      const ids: string[] = [];
      for (let i = 0; i < 3; i++) {
        ids.push((await t.call("/api/GenerateNamespaceToken", { namespaceId: admin.namespaceId }, { cookie: admin.cookie })).body.tokenId);
        t.clock.advance(1000);
      }
      const list = await t.call("/api/ListNamespaceTokens", { namespaceId: admin.namespaceId }, { cookie: admin.cookie });
      expect(list.body.tokens.map((r: { tokenId: string }) => r.tokenId)).toEqual(ids.reverse());
    });

    test("a read-only member can list but gets the spec's 403 texts for generate and delete", async () => {
      const { admin, member } = await teamWithMember();
      const nsToken = (await t.call("/api/GenerateNamespaceToken", { namespaceId: admin.namespaceId }, { cookie: admin.cookie })).body;
      const orgToken = (await t.call("/api/GenerateOrgToken", { orgId: admin.orgId }, { cookie: admin.cookie })).body;

      expect(
        (await t.call("/api/ListNamespaceTokens", { namespaceId: admin.namespaceId }, { cookie: member.cookie })).body.tokens,
      ).toHaveLength(1);
      expect((await t.call("/api/ListOrgTokens", { orgId: admin.orgId }, { cookie: member.cookie })).body.tokens).toHaveLength(1);

      const cases: Array<[string, object, string]> = [
        [
          "/api/GenerateNamespaceToken",
          { namespaceId: admin.namespaceId },
          "You do not have permissions to generate a token in this namespace.",
        ],
        ["/api/DeleteNamespaceToken", { tokenId: nsToken.tokenId }, "You do not have permissions to delete a token in this namespace."],
        ["/api/GenerateOrgToken", { orgId: admin.orgId }, "You do not have permissions to generate a token in this org."],
        ["/api/DeleteOrgToken", { tokenId: orgToken.tokenId }, "You do not have permissions to delete a token in this org."],
      ];
      for (const [path, body, error] of cases) {
        const res = await t.call(path, body, { cookie: member.cookie });
        expect(res.status).toBe(403);
        expect(res.body).toEqual({ error });
      }
      // Nothing was deleted.
      expect(
        (await t.call("/api/ListNamespaceTokens", { namespaceId: admin.namespaceId }, { cookie: admin.cookie })).body.tokens,
      ).toHaveLength(1);
    });

    test("another org's namespace, org and tokens look exactly like ones that do not exist", async () => {
      const owner = await t.onboardedUser();
      const stranger = await t.onboardedUser();
      const nsToken = (await t.call("/api/GenerateNamespaceToken", { namespaceId: owner.namespaceId }, { cookie: owner.cookie })).body;
      const orgToken = (await t.call("/api/GenerateOrgToken", { orgId: owner.orgId }, { cookie: owner.cookie })).body;
      const missing = crypto.randomUUID();

      const pairs: Array<[string, object, object]> = [
        ["/api/ListNamespaceTokens", { namespaceId: owner.namespaceId }, { namespaceId: missing }],
        ["/api/GenerateNamespaceToken", { namespaceId: owner.namespaceId }, { namespaceId: missing }],
        ["/api/DeleteNamespaceToken", { tokenId: nsToken.tokenId }, { tokenId: missing }],
        ["/api/ListOrgTokens", { orgId: owner.orgId }, { orgId: missing }],
        ["/api/GenerateOrgToken", { orgId: owner.orgId }, { orgId: missing }],
        ["/api/DeleteOrgToken", { tokenId: orgToken.tokenId }, { tokenId: missing }],
      ];
      for (const [path, foreign, unknown] of pairs) {
        const a = await t.call(path, foreign, { cookie: stranger.cookie });
        const b = await t.call(path, unknown, { cookie: stranger.cookie });
        expect(a.status).toBe(404);
        expect(a.body).toEqual(b.body);
        expect(a.status).toBe(b.status);
      }
      // The owner's tokens survived the stranger's attempts and still authenticate.
      expect((await t.call("/api/ListNamespaces", { orgId: owner.orgId }, { bearer: nsToken.token, origin: null })).status).toBe(200);
      expect((await t.call("/api/ListNamespaces", { orgId: owner.orgId }, { bearer: orgToken.token, origin: null })).status).toBe(200);
    });

    test("malformed ids and bodies are 400 or 404, never 500", async () => {
      const admin = await t.onboardedUser();
      expect((await t.call("/api/GenerateNamespaceToken", { namespaceId: "not-a-uuid" }, { cookie: admin.cookie })).status).toBe(404);
      expect((await t.call("/api/DeleteOrgToken", { tokenId: "'; drop table org_tokens; --" }, { cookie: admin.cookie })).status).toBe(404);
      expect((await t.call("/api/GenerateNamespaceToken", {}, { cookie: admin.cookie })).status).toBe(400);
      expect((await t.call("/api/ListOrgTokens", { orgId: 42 }, { cookie: admin.cookie })).status).toBe(400);
    });

    test("bogus bearer tokens are refused", async () => {
      const admin = await t.onboardedUser();
      for (const bearer of ["tsk_" + "A".repeat(43), "tso_" + "B".repeat(43), "garbage", admin.cookie.split("=")[1]!]) {
        expect((await t.call("/api/ListNamespaces", { orgId: admin.orgId }, { bearer, origin: null })).status).toBe(401);
      }
    });
  });
}
