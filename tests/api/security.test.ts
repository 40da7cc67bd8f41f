import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { links } from "#db/schema/index.ts";
import { type OtherRouteName, otherRoutes } from "~/api/routes.ts";
import { formatTagsHeader } from "~/api/telemetry/tags.ts";
import type { CallerKind, Callers } from "~/lib/protocol/api/callers.ts";
import { type ApiCallName, apiCalls } from "~/lib/protocol/api/calls.ts";
import { type SocketChannelName, socketChannels } from "~/lib/protocol/sockets.ts";
import { createSession } from "~/services/auth/create-session.ts";
import { revokeSession } from "~/services/auth/revoke-session.ts";
import { SESSION_COOKIE } from "~/services/auth/session-token.ts";
import { openDuckDbStore } from "~/store/duckdb.ts";
import type { EventStore } from "~/store/types.ts";
import { type Answer, backends, captureLogs, listenTestApp, ORIGIN, startTestApp, type TestApp } from "../support/app.ts";

/**
 * Who may make each call, open each socket and reach each route, driven from their declarations
 * (lib/protocol/api/calls.ts, lib/protocol/sockets.ts, src/api/routes.ts; ADR 0028): every kind of caller, and every
 * way a credential fails, against every one of them. A call, socket or route added without a declaration, or without
 * its row here, fails the first test.
 */

/** What a request presents: each kind of caller, and each way a credential stops counting. */
const presentations = [
  "none",
  "endedSession",
  "user",
  "namespaceToken",
  "orgToken",
  "deletedNamespaceToken",
  "deletedOrgToken",
  "unknownToken",
] as const;
type Presented = (typeof presentations)[number];

/** The kind of caller a presentation is; "invalid" for a bearer token that authenticates nobody. */
const kindOf: Record<Presented, CallerKind | "invalid"> = {
  none: "anonymous",
  endedSession: "anonymous",
  user: "user",
  namespaceToken: "namespaceToken",
  orgToken: "orgToken",
  deletedNamespaceToken: "invalid",
  deletedOrgToken: "invalid",
  unknownToken: "invalid",
};

const kindNames: Record<CallerKind, string> = {
  anonymous: "no credential",
  user: "a signed-in user",
  namespaceToken: "a namespace token (tsk_...)",
  orgToken: "an org worker token (tso_...)",
};

const INVALID_TOKEN = "the token is not valid (deleted, or from another server?)";

type Expected = { status: number; error?: string | RegExp };
const ok: Expected = { status: 200 };

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/** The answer a declaration gives what a request presents: `admitted`, or the one refusal for the mismatch. */
function declared(callers: Callers, presented: Presented, what: string, admitted: Expected): Expected {
  const kind = kindOf[presented];
  if (kind === "invalid") return { status: 401, error: INVALID_TOKEN };
  if (callers.includes(kind)) return admitted;
  if (kind === "anonymous") return { status: 401, error: callers.includes("user") ? "not signed in" : / is required$/ };
  return { status: 403, error: new RegExp(`^forbidden: ${what} takes .+, not ${escapeRegExp(kindNames[kind])}$`) };
}

function expectAnswer(res: Answer, expected: Expected, label: string): void {
  expect(res.status, label).toBe(expected.status);
  if (typeof expected.error === "string") expect(res.body?.error, label).toBe(expected.error);
  else if (expected.error) expect(res.body?.error, label).toMatch(expected.error);
  if (res.status === 401 || res.status === 403) expect(res.headers.get("x-trace-id"), label).toMatch(/^[A-Za-z0-9_-]{16}$/);
}

const isRefusal = (e: Expected) => e.status === 401 || e.status === 403;

let peers = 0;
/** Each request from an address of its own: the per-client limits (sign-in mails, anonymous links) stay out of the way. */
const nextPeer = () => `198.51.${Math.floor(peers / 250) % 250}.${(peers++ % 250) + 1}`;

/** Everything the matrix needs of an app: a fixture with one credential of each kind, and requests as each. */
function matrixOf(t: TestApp) {
  const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

  async function sessionCookie(userId: string) {
    const session = await createSession({ ctx: t.ctx, userId });
    return { cookie: `${SESSION_COOKIE}=${session.token}`, sessionId: session.sessionId };
  }

  async function generated(path: "/api/GenerateNamespaceToken" | "/api/GenerateOrgToken", body: object, cookie: string) {
    const res = await t.call(path, body, { cookie });
    if (res.status !== 200) throw new Error(`${path}: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body as { token: string; tokenId: string };
  }

  /** A rule of the fixture's namespace, made by its admin (what DeleteAlertRule takes). */
  async function alertRule(f: { namespaceId: string; cookie: string }): Promise<string> {
    const res = await t.call("/api/SaveAlertRule", { namespaceId: f.namespaceId, rule: alertRuleInput() }, { cookie: f.cookie });
    if (res.status !== 200) throw new Error(`SaveAlertRule: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body.rule.ruleId as string;
  }

  /**
   * An admin of an org and namespace with a member, and one credential of each presentation: tokens of the namespace
   * and the org, a deleted one of each, a session that was ended.
   */
  async function fixture() {
    const admin = await t.onboardedUser();
    const member = await t.user();
    await t.addMember(admin, member);
    const namespaceToken = await generated("/api/GenerateNamespaceToken", { namespaceId: admin.namespaceId }, admin.cookie);
    const orgToken = await generated("/api/GenerateOrgToken", { orgId: admin.orgId }, admin.cookie);
    const deletedNamespaceToken = await generated("/api/GenerateNamespaceToken", { namespaceId: admin.namespaceId }, admin.cookie);
    await t.call("/api/DeleteNamespaceToken", { tokenId: deletedNamespaceToken.tokenId }, { cookie: admin.cookie });
    const deletedOrgToken = await generated("/api/GenerateOrgToken", { orgId: admin.orgId }, admin.cookie);
    await t.call("/api/DeleteOrgToken", { tokenId: deletedOrgToken.tokenId }, { cookie: admin.cookie });
    const ended = await sessionCookie(admin.userId);
    await revokeSession({ ctx: t.ctx, sessionId: ended.sessionId });
    return {
      ...admin,
      member,
      tokens: { namespaceToken: namespaceToken.token, orgToken: orgToken.token },
      deleted: { namespaceToken: deletedNamespaceToken.token, orgToken: deletedOrgToken.token },
      endedCookie: ended.cookie,
    };
  }
  type Fixture = Awaited<ReturnType<typeof fixture>>;

  /** The headers of a presentation (a user's is a session of its own, so a row that signs out ends nothing else). */
  async function present(f: Fixture, presented: Presented): Promise<Record<string, string>> {
    switch (presented) {
      case "none":
        return {};
      case "endedSession":
        return { cookie: f.endedCookie };
      case "user":
        return { cookie: (await sessionCookie(f.userId)).cookie };
      case "namespaceToken":
      case "orgToken":
        return bearer(f.tokens[presented]);
      case "deletedNamespaceToken":
        return bearer(f.deleted.namespaceToken);
      case "deletedOrgToken":
        return bearer(f.deleted.orgToken);
      case "unknownToken":
        return bearer(`tsk_${"A".repeat(43)}`);
    }
  }

  /** A JSON call as the dashboard or the CLI sends it: our Origin, JSON, from an address of its own. */
  async function call(name: ApiCallName, body: unknown, f: Fixture, presented: Presented): Promise<Answer> {
    return t.call(`/api/${name}`, body, { headers: await present(f, presented), peer: nextPeer() });
  }

  async function spareNamespace(f: Fixture): Promise<string> {
    const res = await t.call(
      "/api/CreateNamespace",
      { orgId: f.orgId, name: `s-${crypto.randomUUID().slice(0, 8)}` },
      { cookie: f.cookie },
    );
    return res.body.namespaceId;
  }

  async function spareMember(f: Fixture): Promise<string> {
    const member = await t.user();
    await t.addMember(f, member);
    return member.userId;
  }

  async function pendingInvitation(f: Fixture): Promise<string> {
    const email = `i-${crypto.randomUUID().slice(0, 8)}@example.com`;
    await t.call("/api/AddUser", { namespaceId: f.namespaceId, email }, { cookie: f.cookie });
    const users = (await t.call("/api/ListUsers", { namespaceId: f.namespaceId }, { cookie: f.cookie })).body.users;
    return users.find((u: { email: string }) => u.email === email).invitationId;
  }

  /** An invitation to the fixture's admin, from someone else's namespace: theirs to answer. */
  async function invitationToAdmin(f: Fixture): Promise<string> {
    const inviter = await t.onboardedUser();
    await t.call("/api/AddUser", { namespaceId: inviter.namespaceId, email: f.email }, { cookie: inviter.cookie });
    const mine = (await t.call("/api/ListMyInvitations", {}, { cookie: f.cookie })).body.invitations;
    return mine.find((i: { namespaceId: string }) => i.namespaceId === inviter.namespaceId).invitationId;
  }

  async function liveLink(): Promise<string> {
    return (await t.call("/api/JoinPublisher", {}, { origin: null, peer: nextPeer() })).body.linkId;
  }

  async function loginLinkToken(): Promise<string> {
    const email = `l-${crypto.randomUUID().slice(0, 8)}@example.com`;
    const lines = await captureLogs(() => t.call("/api/EmailLogin", { email }, { peer: nextPeer() }));
    const token = lines.map((l) => /magic link for \S+: \S+\?token=([A-Za-z0-9_-]+)/.exec(l)?.[1]).find(Boolean);
    if (!token) throw new Error("no sign-in link in the log");
    return token;
  }

  type RouteRow = { path: string; method?: "POST" | "DELETE"; headers?: Record<string, string>; body?: string; admitted?: Expected };
  const json = { "content-type": "application/json" };

  /** A request to each route of src/api/routes.ts; `admitted` when an admitted caller's answer is not 200. */
  const routeRows: { [R in OtherRouteName]: (f: Fixture) => RouteRow } = {
    "GET /api/GetSelf": () => ({ path: "/api/GetSelf" }),
    "GET /api/DownloadHar": (f) => ({
      path: `/api/DownloadHar?namespaceId=${f.namespaceId}&eventId=${crypto.randomUUID()}`,
      admitted: { status: 404, error: "request not found" },
    }),
    "POST /api/DownloadHar": (f) => {
      const now = t.clock.now().getTime();
      const filter = { clauses: [], global: { lowerMs: now - 3_600_000, upperMs: now } };
      return { path: "/api/DownloadHar", method: "POST", headers: json, body: JSON.stringify({ namespaceId: f.namespaceId, filter }) };
    },
    "GET /api/LogOut": () => ({ path: "/api/LogOut", headers: { "sec-fetch-site": "same-origin" }, admitted: { status: 302 } }),
    "GET /api/StripeRedirect": (f) => ({
      path: `/api/StripeRedirect?org_id=${f.orgId}&tier_name=team-20250212`,
      admitted: { status: 302 },
    }),
    "POST /api/Event": () => ({
      path: "/api/Event",
      method: "POST",
      headers: { "x-tags": formatTagsHeader({ kind: "EmailSubmitError", error_message: "matrix", error_name: "Error" }) },
    }),
    "POST /api/LogEvent": () => ({ path: "/api/LogEvent", method: "POST", headers: { "x-tags": "kind=QueryEvaluated;duration_ms=1" } }),
    "GET /api/health": () => ({ path: "/api/health" }),
    "GET /api/EmailLoginCallback": () => ({ path: "/api/EmailLoginCallback?token=abc" }),
    "GET /api/GoogleRedirect": () => ({ path: "/api/GoogleRedirect" }),
    "GET /api/GoogleCallback": () => ({ path: "/api/GoogleCallback?code=x&state=y" }),
    "GET /api/GithubRedirect": () => ({ path: "/api/GithubRedirect" }),
    "GET /api/GithubCallback": () => ({ path: "/api/GithubCallback?code=x&state=y" }),
    "POST /api/StripeWebhook": () => ({ path: "/api/StripeWebhook", method: "POST", headers: json, body: "{}" }),
    "POST /mcp": () => ({
      path: "/mcp",
      method: "POST",
      headers: { ...json, accept: "application/json, text/event-stream" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
    }),
    "GET /mcp": () => ({ path: "/mcp" }),
    "DELETE /mcp": () => ({ path: "/mcp", method: "DELETE" }),
    "GET /install.sh": () => ({ path: "/install.sh" }),
    "GET /download/:file": () => ({ path: "/download/tapscope-linux-x64.sha256" }),
    "GET /": () => ({ path: "/" }),
    "GET /*": () => ({ path: "/login" }),
  };

  async function route(row: RouteRow, f: Fixture, presented: Presented): Promise<Answer> {
    const headers = { origin: ORIGIN, ...row.headers, ...(await present(f, presented)) };
    return t.request(row.path, { method: row.method ?? "GET", headers, body: row.body }, { peer: nextPeer() });
  }

  return {
    fixture,
    present,
    call,
    routeRows,
    route,
    generated,
    alertRule,
    sessionCookie,
    liveLink,
    spareNamespace,
    spareMember,
    pendingInvitation,
    invitationToAdmin,
    loginLinkToken,
  };
}

type Matrix = ReturnType<typeof matrixOf>;
type Fixture = Awaited<ReturnType<Matrix["fixture"]>>;

type CallRow = { body: unknown; admitted?: Expected };

/**
 * Each call's body, made afresh for each row so that what one row takes the next still has: a body the fixture's
 * admin (or its tokens) may send. `admitted`: the verb's answer to an admitted caller when it is not 200.
 */
const callRows: { [N in ApiCallName]: (f: Fixture, m: Matrix) => CallRow | Promise<CallRow> } = {
  EmailLogin: () => ({ body: { email: `e-${crypto.randomUUID().slice(0, 8)}@example.com` } }),
  FinishEmailLogin: async (_f, m) => ({ body: { token: await m.loginLinkToken(), confirm: true } }),
  ListOrgs: () => ({ body: {} }),
  ListNamespaces: (f) => ({ body: { orgId: f.orgId } }),
  CreateNamespace: (f) => ({ body: { orgId: f.orgId, name: `n-${crypto.randomUUID().slice(0, 8)}` } }),
  DeleteNamespace: async (f, m) => ({ body: { namespaceId: await m.spareNamespace(f) } }),
  OnboardNewUser: () => ({ body: { namespaceName: "again" } }),
  CreateTunnel: (f) => ({ body: { namespaceId: f.namespaceId, role: "SELECT" } }),
  ListOpenTunnels: () => ({ body: {} }),
  HasSeenPublisher: (f) => ({ body: { orgId: f.orgId } }),
  GenerateNamespaceToken: (f) => ({ body: { namespaceId: f.namespaceId } }),
  GenerateOrgToken: (f) => ({ body: { orgId: f.orgId } }),
  GetBillingStatus: (f) => ({ body: { orgId: f.orgId } }),
  GetSubscription: (f) => ({ body: { orgId: f.orgId } }),
  // Billing is off in this app: an admitted caller reaches the verb, which says so (tests/api/billing/billing.test.ts has it on).
  CancelSubscription: () => ({
    body: { stripeSubscriptionId: "sub_matrix" },
    admitted: { status: 404, error: "billing is not enabled on this server" },
  }),
  OpenBillingPortal: (f) => ({ body: { orgId: f.orgId }, admitted: { status: 404, error: "billing is not enabled on this server" } }),
  ListNamespaceTokens: (f) => ({ body: { namespaceId: f.namespaceId } }),
  ListOrgTokens: (f) => ({ body: { orgId: f.orgId } }),
  DeleteNamespaceToken: async (f, m) => ({
    body: { tokenId: (await m.generated("/api/GenerateNamespaceToken", { namespaceId: f.namespaceId }, f.cookie)).tokenId },
  }),
  DeleteOrgToken: async (f, m) => ({
    body: { tokenId: (await m.generated("/api/GenerateOrgToken", { orgId: f.orgId }, f.cookie)).tokenId },
  }),
  RenameNamespaceToken: async (f, m) => ({
    body: {
      tokenId: (await m.generated("/api/GenerateNamespaceToken", { namespaceId: f.namespaceId }, f.cookie)).tokenId,
      label: "renamed",
    },
  }),
  RenameOrgToken: async (f, m) => ({
    body: { tokenId: (await m.generated("/api/GenerateOrgToken", { orgId: f.orgId }, f.cookie)).tokenId, label: "renamed" },
  }),
  ListUsers: (f) => ({ body: { namespaceId: f.namespaceId } }),
  AddUser: (f) => ({ body: { namespaceId: f.namespaceId, email: `a-${crypto.randomUUID().slice(0, 8)}@example.com` } }),
  RemoveUser: async (f, m) => ({ body: { namespaceId: f.namespaceId, userId: await m.spareMember(f) } }),
  RevokeInvitation: async (f, m) => ({ body: { invitationId: await m.pendingInvitation(f) } }),
  EndUserSessions: (f) => ({ body: { namespaceId: f.namespaceId, userId: f.member.userId } }),
  ListMyInvitations: () => ({ body: {} }),
  AcceptInvitation: async (f, m) => ({ body: { invitationId: await m.invitationToAdmin(f) } }),
  DeclineInvitation: async (f, m) => ({ body: { invitationId: await m.invitationToAdmin(f) } }),
  JoinSubscriber: (f) => ({ body: { namespaceId: f.namespaceId } }),
  JoinPublisher: () => ({ body: {} }),
  GetLink: async (_f, m) => ({ body: { linkId: await m.liveLink() } }),
  GetOtlpExport: (f) => ({ body: { namespaceId: f.namespaceId } }),
  SaveOtlpExport: (f) => ({
    body: { namespaceId: f.namespaceId, endpoint: "http://collector.example:4318", protocol: "http/protobuf", isEnabled: true },
  }),
  DeleteOtlpExport: (f) => ({ body: { namespaceId: f.namespaceId } }),
  // No collector is set in this app: an admitted caller reaches the verb, which says so (tests/services/otlp/settings.test.ts sends one).
  SendOtlpTestSpan: (f) => ({
    body: { namespaceId: f.namespaceId },
    admitted: { status: 400, error: "no collector is set for this namespace: save an endpoint first" },
  }),
  GetReplayAvailability: (f) => ({ body: { namespaceId: f.namespaceId } }),
  // No event is stored in this app: an admitted caller reaches the verb, which looks it up (tests/e2e/resend.e2e.ts sends one).
  ResendRequest: (f) => ({
    body: { namespaceId: f.namespaceId, eventId: crypto.randomUUID(), method: "GET", path: "/", headers: [], body: "" },
    admitted: { status: 404, error: "no such request in this namespace (it may be older than the retention)" },
  }),
  GetRoutePatterns: (f) => ({ body: { namespaceId: f.namespaceId } }),
  SetRoutePatterns: (f) => ({ body: { namespaceId: f.namespaceId, patterns: ["/users/{id}"] } }),
  ListAlerts: (f) => ({ body: { namespaceId: f.namespaceId } }),
  SaveAlertRule: (f) => ({ body: { namespaceId: f.namespaceId, rule: alertRuleInput() } }),
  DeleteAlertRule: async (f, m) => ({ body: { namespaceId: f.namespaceId, ruleId: await m.alertRule(f) } }),
};

function alertRuleInput() {
  return {
    name: "matrix",
    metric: "server_errors",
    threshold: 5,
    windowMinutes: 5,
    minRequests: 10,
    endpoint: null,
    filterText: "",
    emails: [],
    webhookUrl: "https://hooks.example.com/tapscope",
  };
}

/** A real WebSocket to the listening app, recording what it is sent. */
type TestSocket = { ws: WebSocket; frames: Array<string | ArrayBuffer>; until(check: () => boolean, what: string): Promise<void> };

function openSocket(url: string, headers: Record<string, string> = {}): Promise<TestSocket> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { headers } as unknown as string[]);
    ws.binaryType = "arraybuffer";
    const frames: Array<string | ArrayBuffer> = [];
    ws.onmessage = (m) => frames.push(m.data as string | ArrayBuffer);
    const until = async (check: () => boolean, what: string) => {
      // Generous for a loaded machine: the bound only tells a socket that is served from one that never is.
      const deadline = Date.now() + 10_000;
      while (!check()) {
        if (Date.now() > deadline || ws.readyState > 1) throw new Error(`${url}: no ${what} (state ${ws.readyState})`);
        await Bun.sleep(10);
      }
    };
    ws.onopen = () => resolve({ ws, frames, until });
    ws.onerror = () => reject(new Error(`websocket refused: ${url}`));
  });
}

const hasText = (s: TestSocket, text: string) => s.frames.some((f) => typeof f === "string" && f.includes(text));

/** What proves each socket open and served; ticket sockets also say where their issuing call's answer puts the URL. */
const socketRows: {
  [S in SocketChannelName]: { urlOf?: (answer: Record<string, string>) => string; probe: (s: TestSocket) => Promise<void> };
} = {
  LiveSubscribe: { urlOf: (a) => a.websocketUrl ?? "", probe: (s) => s.until(() => hasText(s, '"hello"'), "hello") },
  PingLink: {
    probe: async (s) => {
      s.ws.send("ping");
      await s.until(() => hasText(s, "pong"), "pong");
    },
  },
  PublishEvents: { urlOf: (a) => a.websocketUrl ?? "", probe: (s) => s.until(() => hasText(s, '"ready"'), "ready") },
  Tunnel: {
    urlOf: (a) => a.endpoint ?? "",
    probe: async (s) => {
      s.ws.send("not a binary request");
      await s.until(() => s.frames.some((f) => f instanceof ArrayBuffer), "a result frame");
    },
  },
  WorkerConnect: { probe: (s) => s.until(() => hasText(s, '"ready"'), "ready") },
};

describe("who may call what, from the declarations [pglite]", () => {
  let t: TestApp;
  let store: EventStore;
  let listener: ReturnType<typeof listenTestApp>;
  let m: ReturnType<typeof matrixOf>;
  beforeAll(async () => {
    store = await openDuckDbStore({ path: ":memory:" });
    t = await startTestApp({ backend: "pglite", store, env: { ANONYMOUS_LINKS_PER_HOUR: "100000" } });
    listener = listenTestApp(t);
    m = matrixOf(t);
  }, 60_000);
  afterAll(async () => {
    await listener?.stop();
    await t?.close();
    await store?.close();
  });

  test("every route of the app is a declared call, socket or route, each declaration is served, and each has its rows", () => {
    const calls = Object.keys(apiCalls).map((name) => `POST /api/${name}`);
    const sockets = Object.values(socketChannels).map((s) => `GET ${s.path}`);
    const declaredRoutes = new Set([...calls, ...sockets, ...Object.keys(otherRoutes)]);
    const served = t.app.routes.map((r) => `${r.method} ${r.path}`);
    expect(served.filter((r) => !declaredRoutes.has(r))).toEqual([]);
    expect([...declaredRoutes].filter((r) => !served.includes(r))).toEqual([]);
    expect(Object.keys(callRows).sort()).toEqual(Object.keys(apiCalls).sort());
    expect(Object.keys(m.routeRows).sort()).toEqual(Object.keys(otherRoutes).sort());
    expect(Object.keys(socketRows).sort()).toEqual(Object.keys(socketChannels).sort());
    for (const [name, call] of Object.entries(apiCalls)) expect(call.callers.length, name).toBeGreaterThan(0);
    for (const [name, socket] of Object.entries(socketChannels)) {
      expect("ticketFrom" in socket || "isLinkCapability" in socket || "callers" in socket, name).toBe(true);
    }
  });

  for (const name of Object.keys(apiCalls) as ApiCallName[]) {
    const { callers } = apiCalls[name];
    test(`${name} (${callers.join(", ")}): each kind of caller, and each failed credential, gets the declared answer`, async () => {
      const f = await m.fixture();
      const replayAs = (["user", "namespaceToken", "orgToken", "none"] as const).find((p) => declared(callers, p, name, ok) === ok)!;
      for (const presented of presentations) {
        const row = await callRows[name](f, m);
        const admitted = row.admitted ?? ok;
        const expected = declared(callers, presented, name, admitted);
        expectAnswer(await m.call(name, row.body, f, presented), expected, `${name} as ${presented}`);
        // A refusal did nothing: the same body is still what it was for a caller the call admits.
        if (isRefusal(expected))
          expectAnswer(await m.call(name, row.body, f, replayAs), admitted, `${name} as ${replayAs} after ${presented}`);
      }
    }, 60_000);
  }

  test("a refused caller is refused before the body is read: the same answer with a body that does not validate", async () => {
    const f = await m.fixture();
    const invalid = { status: 400 };
    for (const [name, { callers }] of Object.entries(apiCalls) as Array<[ApiCallName, (typeof apiCalls)[ApiCallName]]>) {
      for (const presented of ["none", "namespaceToken", "unknownToken"] as const) {
        const expected = declared(callers, presented, name, invalid);
        if (expected !== invalid) expectAnswer(await m.call(name, 42, f, presented), expected, `${name} as ${presented}`);
      }
    }
    // Read, that body is refused as such.
    expect((await m.call("EmailLogin", 42, f, "none")).status).toBe(400);
  }, 60_000);

  for (const name of Object.keys(otherRoutes) as OtherRouteName[]) {
    const declaration: { callers: Callers; isUnguarded?: true } = otherRoutes[name];
    const title = declaration.isUnguarded
      ? "refuses nobody, and no token changes its answer"
      : `each kind of caller gets the declared answer (${declaration.callers.join(", ")})`;
    test(`${name}: ${title}`, async () => {
      const f = await m.fixture();
      const row = m.routeRows[name](f);
      if (declaration.isUnguarded) {
        const anonymous = await m.route(row, f, "none");
        expect([401, 403], name).not.toContain(anonymous.status);
        for (const presented of ["unknownToken", "namespaceToken", "orgToken"] as const) {
          expect((await m.route(row, f, presented)).status, `${name} as ${presented}`).toBe(anonymous.status);
        }
        return;
      }
      for (const presented of presentations) {
        const expected = declared(declaration.callers, presented, name.slice(name.lastIndexOf("/") + 1), row.admitted ?? ok);
        expectAnswer(await m.route(row, f, presented), expected, `${name} as ${presented}`);
      }
    }, 60_000);
  }

  /** Asks for an upgrade through app.handle: a refusal is an HTTP answer; an admitted request reaches the upgrade. */
  const upgrade = (url: string, headers: Record<string, string> = {}) => {
    const u = new URL(url);
    return t.request(`${u.pathname}${u.search}`, { headers: { upgrade: "websocket", connection: "Upgrade", ...headers } });
  };
  const reachedUpgrade: Expected = { status: 400, error: "this endpoint takes a WebSocket upgrade" };

  for (const name of Object.keys(socketChannels) as SocketChannelName[]) {
    const socket: { path: string; ticketFrom?: ApiCallName; isLinkCapability?: true; callers?: Callers } = socketChannels[name];
    const { ticketFrom: issuer, callers } = socket;

    if (issuer) {
      test(`${name}: a ticket from ${issuer} opens it for whoever may call ${issuer}, once, for a minute, while its credential holds`, async () => {
        const f = await m.fixture();
        const row = socketRows[name];
        const refused = new RegExp(`^${name} ticket missing, invalid, used or expired: call ${issuer} again$`);
        const ticketUrl = async (headers: Record<string, string>) => {
          const res = await t.call(`/api/${issuer}`, (await callRows[issuer](f, m)).body, { headers, peer: nextPeer() });
          expect(res.status, `${issuer}: ${JSON.stringify(res.body)}`).toBe(200);
          return row.urlOf!(res.body);
        };
        for (const presented of ["none", "user", "namespaceToken", "orgToken"] as const) {
          if (declared(apiCalls[issuer].callers, presented, issuer, ok) !== ok) continue;
          const label = `${name}, ticket for ${presented}`;
          const opened = await openSocket(listener.socketUrl(await ticketUrl(await m.present(f, presented))));
          await row.probe(opened);
          opened.ws.close();

          const once = await ticketUrl(await m.present(f, presented));
          expectAnswer(await upgrade(once), reachedUpgrade, `${label}, first use`);
          expectAnswer(await upgrade(once), { status: 401, error: refused }, `${label}, spent`);

          const late = await ticketUrl(await m.present(f, presented));
          t.clock.advance(61_000);
          expectAnswer(await upgrade(late), { status: 401, error: refused }, `${label}, expired`);

          if (presented === "none") continue;
          // The credential ends between the ticket and the socket: refused at the upgrade, with what ended.
          const fresh = await freshCredential(f, presented);
          const orphan = await ticketUrl(fresh.headers);
          await fresh.end();
          expectAnswer(await upgrade(orphan), { status: 401, error: `${name} ticket refused: ${fresh.reason}` }, `${label}, ended`);
        }
        if (declared(apiCalls[issuer].callers, "user", issuer, ok) === ok) {
          // A member removed after taking a ticket.
          const member = await t.user();
          await t.addMember(f, member);
          const memberUrl = await ticketUrl({ cookie: member.cookie });
          await t.call("/api/RemoveUser", { namespaceId: f.namespaceId, userId: member.userId }, { cookie: f.cookie });
          expectAnswer(
            await upgrade(memberUrl),
            { status: 401, error: `${name} ticket refused: no longer a member of this namespace` },
            name,
          );
        }
        const path = socket.path;
        expectAnswer(await upgrade(`http://x${path}`), { status: 401, error: refused }, `${name} without a ticket`);
        expectAnswer(await upgrade(`http://x${path}?ticket=forged.ticket`), { status: 401, error: refused }, `${name}, forged`);
        // Cookies and tokens on the request count for nothing: the ticket decides.
        const user = await m.present(f, "user");
        expectAnswer(await upgrade(`http://x${path}`, { ...user, origin: ORIGIN }), { status: 401, error: refused }, `${name}, a session`);
        expectAnswer(
          await upgrade(`http://x${path}`, await m.present(f, "namespaceToken")),
          { status: 401, error: refused },
          `${name}, a token`,
        );
        // Another socket's ticket.
        for (const other of Object.keys(socketChannels) as SocketChannelName[]) {
          const otherIssuer: ApiCallName | undefined = (socketChannels[other] as { ticketFrom?: ApiCallName }).ticketFrom;
          if (!otherIssuer || otherIssuer === issuer) continue;
          const as = (["user", "namespaceToken", "none"] as const).find(
            (p) => declared(apiCalls[otherIssuer].callers, p, otherIssuer, ok) === ok,
          )!;
          const res = await t.call(`/api/${otherIssuer}`, (await callRows[otherIssuer](f, m)).body, { headers: await m.present(f, as) });
          const ticket = new URL(socketRows[other].urlOf!(res.body)).searchParams.get("ticket") ?? "";
          expectAnswer(
            await upgrade(`http://x${path}?ticket=${encodeURIComponent(ticket)}`),
            { status: 401, error: refused },
            `${name}, ${other}'s ticket`,
          );
        }
      }, 60_000);
    }

    if (socket.isLinkCapability) {
      test(`${name}: a live link's id opens it for anyone; an unknown or expired one is 404`, async () => {
        const f = await m.fixture();
        const linkId = await m.liveLink();
        for (const presented of ["none", "unknownToken", "orgToken"] as const) {
          const opened = await openSocket(listener.socketUrl(`ws://x${socket.path}?link_id=${linkId}`), await m.present(f, presented));
          await socketRows[name].probe(opened);
          opened.ws.close();
        }
        expectAnswer(await upgrade(`http://x${socket.path}?link_id=${"u".repeat(22)}`), { status: 404, error: "link not found" }, name);
        const expiredId = `expired-${crypto.randomUUID()}`;
        await t.db.insert(links).values({ id: expiredId, expiresAt: new Date(t.clock.now().getTime() - 1000) });
        expectAnswer(await upgrade(`http://x${socket.path}?link_id=${expiredId}`), { status: 404, error: "this link has expired" }, name);
        if (!issuer)
          expectAnswer(await upgrade(`http://x${socket.path}`), { status: 404, error: "link not found" }, `${name} without a link`);
      }, 60_000);
    }

    if (callers) {
      test(`${name} (${callers.join(", ")}): each kind of caller, and each failed credential, gets the declared answer`, async () => {
        const f = await m.fixture();
        for (const presented of presentations) {
          const headers = { ...(await m.present(f, presented)), origin: ORIGIN };
          const expected = declared(callers, presented, name, ok);
          if (expected !== ok) {
            expectAnswer(await upgrade(`http://x${socket.path}`, headers), expected, `${name} as ${presented}`);
            continue;
          }
          const opened = await openSocket(listener.socketUrl(`ws://x${socket.path}`), headers);
          await socketRows[name].probe(opened);
          opened.ws.close();
        }
        // A session cookie counts only with our Origin: from another site it is no credential at all.
        const user = await m.present(f, "user");
        expectAnswer(
          await upgrade(`http://x${socket.path}`, { ...user, origin: "https://evil.example" }),
          declared(callers, "none", name, ok) === ok ? reachedUpgrade : declared(callers, "none", name, ok),
          `${name}, a session from another Origin`,
        );
      }, 60_000);
    }
  }

  /** A credential of its own for a ticket, and how to end it (with the reason a refused ticket names). */
  async function freshCredential(
    f: Awaited<ReturnType<typeof m.fixture>>,
    presented: "user" | "namespaceToken" | "orgToken",
  ): Promise<{ headers: Record<string, string>; end: () => Promise<void>; reason: string }> {
    if (presented === "user") {
      const session = await m.sessionCookie(f.userId);
      return {
        headers: { cookie: session.cookie },
        end: () => revokeSession({ ctx: t.ctx, sessionId: session.sessionId }),
        reason: "signed out",
      };
    }
    const isNamespace = presented === "namespaceToken";
    const token = await m.generated(
      isNamespace ? "/api/GenerateNamespaceToken" : "/api/GenerateOrgToken",
      isNamespace ? { namespaceId: f.namespaceId } : { orgId: f.orgId },
      f.cookie,
    );
    return {
      headers: { authorization: `Bearer ${token.token}` },
      end: async () => {
        const res = await t.call(
          isNamespace ? "/api/DeleteNamespaceToken" : "/api/DeleteOrgToken",
          { tokenId: token.tokenId },
          { cookie: f.cookie },
        );
        expect(res.status).toBe(200);
      },
      reason: "token deleted",
    };
  }
});

/** Calls about no org or namespace of anyone's: a user of another org makes them as anyone would. */
const unscoped = new Set<ApiCallName>([
  "EmailLogin",
  "FinishEmailLogin",
  "ListOrgs",
  "OnboardNewUser",
  "ListMyInvitations",
  "ListOpenTunnels",
  "JoinPublisher",
  "GetLink",
]);

/** Calls a read-only member of the namespace may not make: 403 with the call's own words. */
const adminOnly = new Set<ApiCallName>([
  "CreateNamespace",
  "DeleteNamespace",
  "GenerateNamespaceToken",
  "GenerateOrgToken",
  "AddUser",
  "RemoveUser",
  "RevokeInvitation",
  "EndUserSessions",
  "DeleteNamespaceToken",
  "DeleteOrgToken",
  "GetOtlpExport",
  "SaveOtlpExport",
  "DeleteOtlpExport",
  "SendOtlpTestSpan",
  "ResendRequest",
  "SetRoutePatterns",
  "SaveAlertRule",
  "DeleteAlertRule",
]);

const userCalls = (Object.keys(apiCalls) as ApiCallName[]).filter((name) => (apiCalls[name].callers as Callers).includes("user"));

for (const backend of backends) {
  describe(`security [${backend}]`, () => {
    let t: TestApp;
    let m: ReturnType<typeof matrixOf>;
    beforeAll(async () => {
      t = await startTestApp({ backend });
      m = matrixOf(t);
    }, 60_000);
    afterAll(() => t.close());

    test("who may call what: a read-only member gets 403 with the call's words on admin calls, and reads", async () => {
      const f = await m.fixture();
      const reader = await t.user();
      await t.addMember(f, reader);
      for (const name of adminOnly) {
        // The namespace the reader is in, not a spare one they cannot see.
        const { body } = name === "DeleteNamespace" ? { body: { namespaceId: f.namespaceId } } : await callRows[name](f, m);
        const res = await t.call(`/api/${name}`, body, { cookie: reader.cookie });
        expect(res.status, name).toBe(403);
        expect(res.body.error, name).toMatch(/^(You do not have permissions to|forbidden: you are not allowed to)/);
      }
      for (const name of ["ListUsers", "ListNamespaceTokens", "JoinSubscriber"] as const) {
        expect((await t.call(`/api/${name}`, (await callRows[name](f, m)).body, { cookie: reader.cookie })).status, name).toBe(200);
      }
      // Nothing was taken: the member and the namespace are still there.
      const users = (await t.call("/api/ListUsers", { namespaceId: f.namespaceId }, { cookie: f.cookie })).body.users;
      expect(users.map((x: { userId: string }) => x.userId)).toContain(f.member.userId);
      expect((await t.request("/api/GetSelf", { headers: { cookie: f.member.cookie } })).status).toBe(200);
    }, 60_000);

    test("CSRF: every call a session may make refuses a cookie POST without our Origin, from another, or not JSON (403)", async () => {
      const f = await m.fixture();
      for (const name of userCalls) {
        const { body } = await callRows[name](f, m);
        for (const origin of [null, "https://evil.example", "null"]) {
          const res = await t.call(`/api/${name}`, body, { cookie: f.cookie, origin });
          expect(res.status, `${name} from ${origin}`).toBe(403);
        }
      }
      // A cross-site form post: text/plain (no preflight), carrying JSON-looking text.
      const form = await t.request("/api/AddUser", {
        method: "POST",
        headers: { cookie: f.cookie, origin: "http://tapscope.test", "content-type": "text/plain" },
        body: JSON.stringify({ namespaceId: f.namespaceId, email: "csrf@example.com" }),
      });
      expect(form.status).toBe(403);
      const users = await t.call("/api/ListUsers", { namespaceId: f.namespaceId }, { cookie: f.cookie });
      expect(users.body.users.map((x: { email: string }) => x.email)).not.toContain("csrf@example.com");
      expect(users.body.users.map((x: { userId: string }) => x.userId)).toContain(f.member.userId);
    }, 60_000);

    test("a call only our own pages may make refuses another Origin even without a session", async () => {
      const sameOriginOnly = (Object.keys(apiCalls) as ApiCallName[]).filter((name) => "isSameOriginOnly" in apiCalls[name]);
      expect(sameOriginOnly).toEqual(["FinishEmailLogin"]);
      const f = await m.fixture();
      for (const name of sameOriginOnly) {
        const { body } = await callRows[name](f, m);
        for (const origin of [null, "https://evil.example"]) {
          expect((await t.call(`/api/${name}`, body, { origin })).body, `${name} from ${origin}`).toEqual({
            error: "forbidden: cross-site request refused",
          });
        }
        expect((await t.call(`/api/${name}`, body)).status, name).toBe(200);
      }
    }, 60_000);

    test("the request's own origin is accepted too (e.g. reached by another host name)", async () => {
      const u = await t.onboardedUser();
      const res = await t.app.handle(
        new Request("http://127.0.0.1:4000/api/ListOrgs", {
          method: "POST",
          headers: { cookie: u.cookie, origin: "http://127.0.0.1:4000", "content-type": "application/json" },
          body: "{}",
        }),
      );
      expect(res.status).toBe(200);
    });

    test("bearer calls need no Origin (they are not sent by browsers on their own)", async () => {
      const f = await m.fixture();
      expect((await t.call("/api/ListNamespaces", { orgId: f.orgId }, { bearer: f.tokens.orgToken, origin: null })).status).toBe(200);
    });

    test("a session of one user never reaches another org's data: 404 on every call about an org or namespace", async () => {
      const a = await t.onboardedUser();
      const b = await m.fixture();
      for (const name of userCalls) {
        if (unscoped.has(name)) continue;
        const { body } = await callRows[name](b, m);
        const res = await t.call(`/api/${name}`, body, { cookie: a.cookie });
        expect(res.status, name).toBe(404);
        expect(JSON.stringify(res.body)).not.toContain(b.email);
      }
      // Nothing of b's was taken.
      const users = (await t.call("/api/ListUsers", { namespaceId: b.namespaceId }, { cookie: b.cookie })).body.users;
      expect(users.map((x: { userId: string }) => x.userId)).toContain(b.member.userId);
      expect((await t.request("/api/GetSelf", { headers: { cookie: b.member.cookie } })).status).toBe(200);
      expect((await t.call("/api/ListOrgs", {}, { cookie: a.cookie })).body.orgs).toEqual([
        { orgId: a.orgId, name: a.email, lastSeenWorkerTime: null },
      ]);
    }, 60_000);

    test("a failed call's trace id header is in the server's log line for that request", async () => {
      let traceId: string | null = null;
      const lines = await captureLogs(async () => {
        const res = await t.call("/api/ListOrgs", {});
        expect(res.status).toBe(401);
        traceId = res.headers.get("x-trace-id");
      });
      const line = lines.map((l) => JSON.parse(l)).find((r) => r.traceId === traceId);
      expect(line).toMatchObject({ path: "/api/ListOrgs", status: 401, error: "not signed in" });
    });

    test("broken JSON is a 400 with a JSON error, not a 500", async () => {
      const u = await t.onboardedUser();
      const res = await t.request("/api/ListOrgs", {
        method: "POST",
        headers: { cookie: u.cookie, origin: "http://tapscope.test", "content-type": "application/json" },
        body: "{not json",
      });
      expect(res.status).toBe(400);
      expect(typeof res.body.error).toBe("string");
    });
  });
}
