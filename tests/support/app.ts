import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Database, openDatabase } from "#db/client.ts";
import { type Config, parseConfig } from "~/lib/server/env.ts";
import { setLogLevel, setLogSink } from "~/lib/server/logger.ts";
import { createRuntime } from "~/runtime.ts";
import { createApp } from "~/server.ts";
import { createSession } from "~/services/auth/create-session.ts";
import { SESSION_COOKIE } from "~/services/auth/session-token.ts";
import { signIn } from "~/services/auth/sign-in.ts";
import type { EventStore } from "~/store/types.ts";
import { createTestPglite } from "./pglite.ts";
import { createTestDatabase, dropTestDatabase } from "./postgres.ts";

// Quiet server logs in tests (TEST_LOG=1 shows them); tests that assert on log lines install their own sink.
if (!process.env.TEST_LOG) setLogSink(() => {});

export type Backend = "pglite" | "postgres";
/** Every API suite runs once per metadata backend. */
export const backends: Backend[] = ["pglite", "postgres"];

export const PUBLIC_URL = "http://tapscope.test";
export const ORIGIN = PUBLIC_URL;
/** The address test requests come from unless one is given (per-client limits count by it). */
export const TEST_PEER = "192.0.2.1";

export type TestClock = { now: () => Date; advance: (ms: number) => void; set: (d: Date) => void };

export function testClock(start = new Date()): TestClock {
  let current = start.getTime();
  return {
    now: () => new Date(current),
    advance: (ms) => {
      current += ms;
    },
    set: (d) => {
      current = d.getTime();
    },
  };
}

export type Answer = { status: number; body: any; headers: Headers; res: Response };

export type TestApp = Awaited<ReturnType<typeof startTestApp>>;

/**
 * A whole app (createApp) on a fresh, migrated database of the chosen backend, an injectable clock and
 * helpers that speak the API like the browser does (JSON, same Origin, the session cookie).
 */
export async function startTestApp({
  backend,
  env = {},
  store,
}: {
  backend: Backend;
  env?: Record<string, string>;
  /** An event store for the app (closed by the caller); none by default: events are shown live only. */
  store?: EventStore;
}) {
  const databaseUrl = backend === "postgres" ? await createTestDatabase() : undefined;
  const database: Database = databaseUrl ? await openDatabase({ databaseUrl }) : await createTestPglite();
  const dataDir = mkdtempSync(join(tmpdir(), "tapscope-test-"));
  const config: Config = parseConfig({
    DATA_DIR: dataDir,
    SESSION_SECRET: "test-session-secret-0123456789abcdef",
    PUBLIC_URL,
    ...env,
  });
  const clock = testClock();
  // app.handle has no socket: each request's peer address is given here (default one local client).
  const peers = new WeakMap<Request, string>();
  const runtime = createRuntime({ config, db: database.db, store, now: clock.now, peerAddress: (r) => peers.get(r) ?? TEST_PEER });
  const app = createApp(runtime);
  const { ctx } = runtime;

  /** `peer`: the socket address the request comes from. */
  async function request(path: string, init: RequestInit = {}, { peer }: { peer?: string } = {}): Promise<Answer> {
    const req = new Request(PUBLIC_URL + path, { redirect: "manual", ...init });
    if (peer !== undefined) peers.set(req, peer);
    const res = await app.handle(req);
    const text = await res.clone().text();
    let body: unknown = text;
    try {
      body = text ? JSON.parse(text) : undefined;
    } catch {
      // not JSON (redirects answer with an empty body)
    }
    return { status: res.status, body, headers: res.headers, res };
  }

  /** A POST as the dashboard sends it: JSON body, our Origin, the session cookie if given. */
  function call(
    path: string,
    body: unknown = {},
    opts: { cookie?: string; origin?: string | null; bearer?: string; headers?: Record<string, string>; peer?: string } = {},
  ): Promise<Answer> {
    const headers: Record<string, string> = { "content-type": "application/json", ...opts.headers };
    if (opts.origin !== null) headers.origin = opts.origin ?? ORIGIN;
    if (opts.cookie) headers.cookie = opts.cookie;
    if (opts.bearer) headers.authorization = `Bearer ${opts.bearer}`;
    return request(path, { method: "POST", headers, body: JSON.stringify(body) }, { peer: opts.peer });
  }

  /** Factory: a signed-in user (through the same services the sign-in routes use). */
  async function user(email = `u-${crypto.randomUUID().slice(0, 8)}@example.com`) {
    const u = await signIn({ ctx, email });
    const session = await createSession({ ctx, userId: u.userId });
    return { ...u, sessionId: session.sessionId, cookie: `${SESSION_COOKIE}=${session.token}` };
  }

  /** Factory: a signed-in user who went through onboarding (an org and a namespace they administer). */
  async function onboardedUser(email?: string) {
    const u = await user(email);
    const res = await call("/api/OnboardNewUser", { namespaceName: `ns-${crypto.randomUUID().slice(0, 6)}` }, { cookie: u.cookie });
    if (res.status !== 200) throw new Error(`onboarding failed: ${res.status} ${JSON.stringify(res.body)}`);
    return { ...u, orgId: res.body.org.orgId as string, namespaceId: res.body.namespace.namespaceId as string };
  }

  /**
   * The admin invites the member's address to a namespace (theirs by default) and the member accepts, as on the
   * dashboard: nobody joins unasked.
   */
  async function addMember(
    admin: { cookie: string; namespaceId: string },
    member: { cookie: string; email: string },
    namespaceId = admin.namespaceId,
  ): Promise<void> {
    const add = await call("/api/AddUser", { namespaceId, email: member.email }, { cookie: admin.cookie });
    if (add.status !== 200) throw new Error(`AddUser failed: ${add.status} ${JSON.stringify(add.body)}`);
    const mine = await call("/api/ListMyInvitations", {}, { cookie: member.cookie });
    const invitation = (mine.body?.invitations ?? []).find((i: { namespaceId: string }) => i.namespaceId === namespaceId);
    if (!invitation) throw new Error(`no invitation to ${namespaceId} for ${member.email}: ${JSON.stringify(mine.body)}`);
    const accepted = await call("/api/AcceptInvitation", { invitationId: invitation.invitationId }, { cookie: member.cookie });
    if (accepted.status !== 200) throw new Error(`AcceptInvitation failed: ${accepted.status} ${JSON.stringify(accepted.body)}`);
  }

  return {
    app,
    runtime,
    ctx,
    db: database.db,
    config,
    clock,
    request,
    call,
    user,
    onboardedUser,
    addMember,
    close: async () => {
      await runtime.close();
      await database.close();
      if (databaseUrl) await dropTestDatabase(databaseUrl);
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** The Set-Cookie value of a cookie, as a `name=value` pair for the next request's Cookie header. */
export function cookieFrom(res: Response, name: string): string | undefined {
  for (const line of res.headers.getSetCookie()) {
    const [pair] = line.split(";");
    if (pair?.startsWith(`${name}=`)) return pair;
  }
  return undefined;
}

export function setCookieLine(res: Response, name: string): string | undefined {
  return res.headers.getSetCookie().find((line) => line.startsWith(`${name}=`));
}

/** Runs fn with the server log captured (at info level, whatever another test file set) and returns the lines. */
export async function captureLogs(fn: () => Promise<unknown>): Promise<string[]> {
  const lines: string[] = [];
  setLogLevel("info");
  const restore = setLogSink((line) => lines.push(line));
  try {
    await fn();
  } finally {
    restore();
  }
  return lines;
}

/**
 * A second app on the test app's database and clock, listening on a free loopback port: for suites that need real
 * sockets (WebSockets, a fetch from outside). `socketUrl` points a socket URL the server handed out at this listener.
 * `store`: the listener's event store (none by default).
 */
export function listenTestApp(t: TestApp, { store }: { store?: EventStore } = {}) {
  const runtime = createRuntime({ config: t.config, db: t.db, now: t.clock.now, store });
  const server = createApp(runtime).listen({ port: 0, hostname: "127.0.0.1" });
  const port = server.server!.port!;
  return {
    runtime,
    port,
    base: `http://127.0.0.1:${port}`,
    socketUrl: (url: string) => {
      const u = new URL(url);
      return `ws://127.0.0.1:${port}${u.pathname}${u.search}`;
    },
    stop: async () => {
      await server.stop(true);
      await runtime.close();
    },
  };
}
