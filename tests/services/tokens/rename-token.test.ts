import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startTestApp, type TestApp } from "../../support/app.ts";

// Tokens have names (given when made, edited after) and say when they were last used; naming is an admin's write,
// checked like deleting.
describe("token names and last use", () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ backend: "pglite" });
  }, 60_000);
  afterAll(() => t.close());

  const list = async (user: { cookie: string; namespaceId: string }) =>
    (await t.call("/api/ListNamespaceTokens", { namespaceId: user.namespaceId }, { cookie: user.cookie })).body.tokens as Array<{
      tokenId: string;
      label: string;
      lastUsedTime: string | null;
    }>;

  test('a token is named when made and renamed after; the name is trimmed, and "" unnames it', async () => {
    const admin = await t.onboardedUser();
    const made = await t.call(
      "/api/GenerateNamespaceToken",
      { namespaceId: admin.namespaceId, label: " staging api " },
      { cookie: admin.cookie },
    );
    expect(made.status).toBe(200);
    const unnamed = await t.call("/api/GenerateNamespaceToken", { namespaceId: admin.namespaceId }, { cookie: admin.cookie });
    // Two tokens made within the same millisecond have no order between them: compare by id.
    const byId = (tokens: Array<[string, string]>) => tokens.sort(([a], [b]) => a.localeCompare(b));
    const labels = async () => byId((await list(admin)).map((token): [string, string] => [token.tokenId, token.label]));
    expect(await labels()).toEqual(
      byId([
        [unnamed.body.tokenId, ""],
        [made.body.tokenId, "staging api"],
      ]),
    );
    const renamed = await t.call(
      "/api/RenameNamespaceToken",
      { tokenId: unnamed.body.tokenId, label: "ci runner" },
      { cookie: admin.cookie },
    );
    expect(renamed.status).toBe(200);
    await t.call("/api/RenameNamespaceToken", { tokenId: made.body.tokenId, label: "" }, { cookie: admin.cookie });
    expect(await labels()).toEqual(
      byId([
        [unnamed.body.tokenId, "ci runner"],
        [made.body.tokenId, ""],
      ]),
    );

    const org = await t.call("/api/GenerateOrgToken", { orgId: admin.orgId, label: "worker a" }, { cookie: admin.cookie });
    await t.call("/api/RenameOrgToken", { tokenId: org.body.tokenId, label: "worker b" }, { cookie: admin.cookie });
    const orgTokens = (await t.call("/api/ListOrgTokens", { orgId: admin.orgId }, { cookie: admin.cookie })).body.tokens;
    expect(orgTokens.map((token: { label: string }) => token.label)).toEqual(["worker b"]);
  });

  test("a name too long or over two lines is refused with a message, and nothing changes", async () => {
    const admin = await t.onboardedUser();
    const made = await t.call("/api/GenerateNamespaceToken", { namespaceId: admin.namespaceId, label: "kept" }, { cookie: admin.cookie });
    for (const label of ["x".repeat(65), "two\nlines", "bell\u0007"]) {
      const answer = await t.call("/api/RenameNamespaceToken", { tokenId: made.body.tokenId, label }, { cookie: admin.cookie });
      expect(answer.status).toBe(400);
      expect(String(answer.body.error)).toMatch(/64/);
    }
    const refused = await t.call(
      "/api/GenerateNamespaceToken",
      { namespaceId: admin.namespaceId, label: "a\tb" },
      { cookie: admin.cookie },
    );
    expect(refused.status).toBe(400);
    expect((await list(admin)).map((token) => token.label)).toEqual(["kept"]);
  });

  test("a member may not rename, and another namespace's token is not found", async () => {
    const admin = await t.onboardedUser();
    const member = await t.user();
    await t.addMember(admin, member);
    const made = await t.call("/api/GenerateNamespaceToken", { namespaceId: admin.namespaceId, label: "mine" }, { cookie: admin.cookie });
    const byMember = await t.call("/api/RenameNamespaceToken", { tokenId: made.body.tokenId, label: "theirs" }, { cookie: member.cookie });
    expect(byMember.status).toBe(403);
    const stranger = await t.onboardedUser();
    const byStranger = await t.call(
      "/api/RenameNamespaceToken",
      { tokenId: made.body.tokenId, label: "theirs" },
      { cookie: stranger.cookie },
    );
    expect(byStranger.status).toBe(404);
    expect((await list(admin)).map((token) => token.label)).toEqual(["mine"]);
  });

  test("last used: null until the token authenticates, then its time, written at most once a minute", async () => {
    const admin = await t.onboardedUser();
    const { token, tokenId } = (await t.call("/api/GenerateNamespaceToken", { namespaceId: admin.namespaceId }, { cookie: admin.cookie }))
      .body;
    const lastUsed = async () => (await list(admin)).find((row) => row.tokenId === tokenId)?.lastUsedTime ?? null;
    expect(await lastUsed()).toBeNull();

    const first = t.clock.now().getTime();
    expect((await t.call("/api/ListNamespaces", { orgId: admin.orgId }, { bearer: token, origin: null })).status).toBe(200);
    expect(await lastUsed()).toBe(new Date(first).toISOString());

    t.clock.advance(30_000);
    await t.call("/api/ListNamespaces", { orgId: admin.orgId }, { bearer: token, origin: null });
    expect(await lastUsed()).toBe(new Date(first).toISOString());

    t.clock.advance(31_000);
    await t.call("/api/ListNamespaces", { orgId: admin.orgId }, { bearer: token, origin: null });
    expect(await lastUsed()).toBe(new Date(first + 61_000).toISOString());
  });
});
