import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { listenTestApp, startTestApp, type TestApp } from "../../support/app.ts";
import { LiveClient } from "../../support/live-client.ts";

/** The live view for a namespace token (`tapscope tail`): its own namespace only, and closed when the token is deleted. */
let t: TestApp;
let listener: ReturnType<typeof listenTestApp>;

beforeAll(async () => {
  t = await startTestApp({ backend: "pglite" });
  listener = listenTestApp(t);
}, 60_000);
afterAll(async () => {
  await listener?.stop();
  await t?.close();
});

async function tokenOf(u: { cookie: string; namespaceId: string }): Promise<{ token: string; tokenId: string }> {
  const res = await t.call("/api/GenerateNamespaceToken", { namespaceId: u.namespaceId }, { cookie: u.cookie });
  return res.body;
}

describe("JoinSubscriber with a namespace token", () => {
  test("the token's own namespace, named or not; another namespace is not found, an org token is refused", async () => {
    const u = await t.onboardedUser();
    const other = await t.onboardedUser();
    const { token } = await tokenOf(u);
    const unnamed = await t.call("/api/JoinSubscriber", {}, { bearer: token, origin: null });
    expect(unnamed.status).toBe(200);
    expect(new URL(unnamed.body.websocketUrl).pathname).toBe("/api/LiveSubscribe");
    expect((await t.call("/api/JoinSubscriber", { namespaceId: u.namespaceId }, { bearer: token, origin: null })).status).toBe(200);
    expect((await t.call("/api/JoinSubscriber", { namespaceId: other.namespaceId }, { bearer: token, origin: null })).status).toBe(404);
    const org = await t.call("/api/GenerateOrgToken", { orgId: u.orgId }, { cookie: u.cookie });
    expect((await t.call("/api/JoinSubscriber", {}, { bearer: org.body.token, origin: null })).status).toBe(403);
    // A signed-in user still names the namespace.
    expect((await t.call("/api/JoinSubscriber", {}, { cookie: u.cookie })).status).toBe(400);
  });

  test("the token's socket sees the namespace's events, and closes when the token is deleted", async () => {
    const u = await t.onboardedUser();
    const { token, tokenId } = await tokenOf(u);
    const joined = await t.call("/api/JoinSubscriber", {}, { bearer: token, origin: null });
    const client = await LiveClient.open(listener.socketUrl(joined.body.websocketUrl));
    await client.until(() => client.messages.some((m) => m.type === "history"), "history");
    expect((await t.call("/api/DeleteNamespaceToken", { tokenId }, { cookie: u.cookie })).status).toBe(200);
    await client.until(() => client.closeCode !== null, "close");
    expect(client.closeCode).toBe(4401);
    expect((await t.call("/api/JoinSubscriber", {}, { bearer: token, origin: null })).status).toBe(401);
  });
});
