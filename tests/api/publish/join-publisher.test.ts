import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { eq } from "drizzle-orm";
import { links } from "#db/schema/index.ts";
import { joinPublisher } from "~/agent/publisher/join.ts";
import { startServer, type TestServer } from "../../support/publish-server.ts";

let server: TestServer;
beforeAll(async () => {
  // This suite makes many anonymous links from one address; the limit itself is tested on servers of its own below.
  server = await startServer({ ANONYMOUS_LINKS_PER_HOUR: "1000" });
}, 30_000);
afterAll(() => server.stop());

async function join(body: unknown = {}, token?: string) {
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (token) headers.authorization = `Bearer ${token}`;
  const res = await fetch(`${server.endpoint}/api/JoinPublisher`, { method: "POST", headers, body: JSON.stringify(body) });
  return { status: res.status, body: (await res.json()) as Record<string, string> };
}

describe("POST /api/JoinPublisher", () => {
  test("without a token: a new anonymous link that expires in 24 hours, and a socket URL with a ticket", async () => {
    const before = Date.now();
    const { status, body } = await join();
    expect(status).toBe(200);
    expect(body.linkId).toMatch(/^[A-Za-z0-9_-]{22,}$/);
    expect(body.namespaceId).toBeUndefined();
    const expiresAt = new Date(body.expiresAt!).getTime();
    expect(expiresAt - before).toBeGreaterThan(24 * 3600_000 - 60_000);
    expect(expiresAt - before).toBeLessThan(24 * 3600_000 + 60_000);
    expect(body.linkUrl).toBe(`${server.endpoint}/link/${body.linkId}?expiry=${encodeURIComponent(body.expiresAt!)}`);
    expect(body.websocketUrl).toStartWith(`ws://127.0.0.1:${new URL(server.endpoint).port}/api/PublishEvents?ticket=`);
    const [row] = await server.db.select().from(links).where(eq(links.id, body.linkId!));
    expect(row?.namespaceId).toBeNull();
    expect(row?.expiresAt.toISOString()).toBe(body.expiresAt!);
  });

  test("each anonymous run gets its own unguessable link", async () => {
    const ids = new Set<string>();
    for (let i = 0; i < 5; i++) ids.add((await join()).body.linkId!);
    expect(ids.size).toBe(5);
  });

  test("with a namespace token: that namespace, no link, and the token never in the URL", async () => {
    const { namespaceId, token } = await server.namespaceWithToken();
    const { status, body } = await join({}, token);
    expect(status).toBe(200);
    expect(body.namespaceId).toBe(namespaceId);
    expect(body.linkId).toBeUndefined();
    expect(body.websocketUrl).not.toContain(token);
    expect(body.websocketUrl).not.toContain(token.slice(4, 20));
  });

  test("a token that does not authenticate is refused (never silently anonymous), and the CLI names TAPSCOPE_TOKEN", async () => {
    const bad = await join({}, `tsk_${"A".repeat(43)}`);
    expect(bad.status).toBe(401);
    expect(bad.body.error).toBe("the token is not valid (deleted, or from another server?)");
    const garbage = await join({}, "hello");
    expect(garbage.status).toBe(401);
    const refused = await joinPublisher(server.endpoint, `tsk_${"A".repeat(43)}`, undefined).catch((err: unknown) => err);
    expect(refused).toMatchObject({
      status: 401,
      message: "TAPSCOPE_TOKEN was refused: the token is not valid (deleted, or from another server?)",
    });
  });

  test("an organization (worker) token cannot publish: 403 naming what the call takes", async () => {
    const { orgId } = await server.namespaceWithToken();
    const res = await join({}, await server.orgToken(orgId));
    expect(res.status).toBe(403);
    expect(res.body.error).toBe(
      "forbidden: JoinPublisher takes no credential or a namespace token (tsk_...), not an org worker token (tso_...)",
    );
  });

  test("a link id override: reuse a live anonymous link, create a strong new one, refuse weak, expired or foreign links", async () => {
    const first = (await join()).body;
    const again = await join({ linkId: first.linkId });
    expect(again.status).toBe(200);
    expect(again.body.linkId).toBe(first.linkId);
    expect(again.body.expiresAt).toBe(first.expiresAt);

    const chosen = "my-own-strong-link-id-0123456789";
    const created = await join({ linkId: chosen });
    expect([created.status, created.body.linkId]).toEqual([200, chosen]);

    expect((await join({ linkId: "short-id" })).status).toBe(400);
    expect((await join({ linkId: "../../etc/passwd" })).status).toBe(400);

    await server.db
      .update(links)
      .set({ expiresAt: new Date(Date.now() - 1000) })
      .where(eq(links.id, chosen));
    const expired = await join({ linkId: chosen });
    expect(expired.status).toBe(404);
    expect(expired.body.error).toContain("expired");

    const a = await server.namespaceWithToken();
    const b = await server.namespaceWithToken();
    const owned = "namespace-owned-link-id-0123456789";
    expect((await join({ linkId: owned }, a.token)).body.namespaceId).toBe(a.namespaceId);
    expect((await join({ linkId: owned }, b.token)).status).toBe(403);
    expect((await join({ linkId: owned })).status).toBe(403);
  });

  test("a malformed body is a 400 with an error", async () => {
    const res = await fetch(`${server.endpoint}/api/JoinPublisher`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ linkId: 42 }),
    });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: string }).error).toBeString();
  });
});

/** Each limit needs a fresh budget, so a server of its own: started before the tests, with time for a loaded machine. */
describe("POST /api/JoinPublisher: the limit on new anonymous links", () => {
  let local: TestServer;
  let proxied: TestServer;
  beforeAll(async () => {
    local = await startServer({ ANONYMOUS_LINKS_PER_HOUR: "10" });
    proxied = await startServer({ TRUST_PROXY: "loopback", ANONYMOUS_LINKS_PER_HOUR: "10" });
  }, 120_000);
  afterAll(async () => {
    await local?.stop();
    await proxied?.stop();
  });

  test("new anonymous links are limited per client, loopback too (Retry-After); a token and rejoining a live link are not", async () => {
    const joinLocal = (body: unknown = {}, headers: Record<string, string> = {}) =>
      fetch(`${local.endpoint}/api/JoinPublisher`, {
        method: "POST",
        headers: { "content-type": "application/json", ...headers },
        body: JSON.stringify(body),
      });
    const statuses: number[] = [];
    let first = "";
    for (let i = 0; i < 10; i++) {
      const res = await joinLocal();
      statuses.push(res.status);
      first ||= ((await res.json()) as { linkId: string }).linkId;
    }
    expect(statuses).toEqual(Array(10).fill(200));
    const limited = await joinLocal();
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(((await limited.json()) as { error: string }).error).toContain("TAPSCOPE_TOKEN");
    // A forwarded-for header from a peer that is not a trusted proxy changes nothing.
    expect((await joinLocal({}, { "x-forwarded-for": "203.0.113.9" })).status).toBe(429);
    // A new link of the caller's own id is a new link too.
    expect((await joinLocal({ linkId: "caller-chosen-link-id-0123456789" })).status).toBe(429);
    expect((await joinLocal({ linkId: first })).status).toBe(200);
    const { token } = await local.namespaceWithToken();
    expect((await joinLocal({}, { authorization: `Bearer ${token}` })).status).toBe(200);
  }, 60_000);

  test("behind a trusted proxy (TRUST_PROXY) each forwarded client has its own budget, and a spoofed left-most entry is never used", async () => {
    const joinAs = (forwardedFor: string) =>
      fetch(`${proxied.endpoint}/api/JoinPublisher`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-forwarded-for": forwardedFor },
        body: "{}",
      }).then((res) => res.status);
    for (let i = 0; i < 10; i++) expect(await joinAs("198.51.100.7")).toBe(200);
    expect(await joinAs("198.51.100.7")).toBe(429);
    // The client writes what it likes on the left; the proxy appends the address it saw.
    expect(await joinAs("10.9.9.9, 198.51.100.7")).toBe(429);
    expect(await joinAs(`${Math.random()}, 198.51.100.7`)).toBe(429);
    expect(await joinAs("198.51.100.8")).toBe(200);
    expect(await joinAs("198.51.100.7, 127.0.0.1")).toBe(429); // a trusted hop is skipped
  }, 60_000);
});
