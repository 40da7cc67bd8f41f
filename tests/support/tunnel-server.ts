import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TracedEvent } from "~/lib/protocol/event.ts";
import { parseConfig } from "~/lib/server/env.ts";
import { setLogSink } from "~/lib/server/logger.ts";
import { createRuntime } from "~/runtime.ts";
import { createApp } from "~/server.ts";
import { createSession } from "~/services/auth/create-session.ts";
import { SESSION_COOKIE } from "~/services/auth/session-token.ts";
import { signIn } from "~/services/auth/sign-in.ts";
import { openDuckDbStore } from "~/store/duckdb.ts";
import { SearchTexts } from "~/store/search-text.ts";
import type { StoreLimits } from "~/store/types.ts";
import { createTestPglite } from "./pglite.ts";

if (!process.env.TEST_LOG) setLogSink(() => {});

/**
 * A real server composed as `tapscope server` composes it (worker registry in front of a DuckDB store in a
 * temp DATA_DIR, store sink on ingest), on PGlite, listening on a free port with PUBLIC_URL pointing at it.
 */
export async function startTunnelServer(
  options: { limits?: Partial<StoreLimits>; withStore?: boolean; env?: Record<string, string> } = {},
) {
  const database = await createTestPglite();
  const dataDir = mkdtempSync(join(tmpdir(), "tapscope-tunnel-"));
  const config = parseConfig({
    DATA_DIR: dataDir,
    SESSION_SECRET: "test-session-secret-0123456789abcdef",
    PUBLIC_URL: "http://127.0.0.1:1",
    ...options.env,
  });
  const store =
    options.withStore === false
      ? undefined
      : await openDuckDbStore({
          path: join(dataDir, "events.duckdb"),
          limits: options.limits,
        });
  const runtime = createRuntime({ config, db: database.db, store });
  const { sinks, workers, attached } = runtime;
  const app = createApp(runtime).listen({ port: 0, hostname: "127.0.0.1" });
  const port = app.server!.port!;
  // The endpoints the server hands out must reach this server.
  config.publicUrl = `http://127.0.0.1:${port}`;
  const base = config.publicUrl;

  async function call(path: string, body: unknown, opts: { cookie?: string; bearer?: string; origin?: string | null } = {}) {
    const headers: Record<string, string> = {
      "content-type": "application/json",
    };
    if (opts.origin !== null) headers.origin = opts.origin ?? base;
    if (opts.cookie) headers.cookie = opts.cookie;
    if (opts.bearer) headers.authorization = `Bearer ${opts.bearer}`;
    const res = await fetch(base + path, {
      method: "POST",
      headers,
      body: JSON.stringify(body),
    });
    const text = await res.text();
    // biome-ignore lint/suspicious/noExplicitAny: answers are asserted field by field in tests
    let parsed: any = text;
    try {
      parsed = JSON.parse(text);
    } catch {}
    return { status: res.status, body: parsed, headers: res.headers };
  }

  async function user(email = `u-${crypto.randomUUID().slice(0, 8)}@example.com`) {
    const ctx = { db: database.db, config, now: () => new Date() };
    const u = await signIn({ ctx, email });
    const session = await createSession({ ctx, userId: u.userId });
    return { ...u, cookie: `${SESSION_COOKIE}=${session.token}` };
  }

  async function onboardedUser() {
    const u = await user();
    const res = await call("/api/OnboardNewUser", { namespaceName: `ns-${crypto.randomUUID().slice(0, 6)}` }, { cookie: u.cookie });
    if (res.status !== 200) throw new Error(`onboarding failed: ${res.status} ${JSON.stringify(res.body)}`);
    return {
      ...u,
      orgId: res.body.org.orgId as string,
      namespaceId: res.body.namespace.namespaceId as string,
    };
  }

  async function namespaceToken(owner: { cookie: string; namespaceId: string }): Promise<string> {
    const res = await call("/api/GenerateNamespaceToken", { namespaceId: owner.namespaceId }, { cookie: owner.cookie });
    if (res.status !== 200) throw new Error(`token: ${res.status}`);
    return res.body.token;
  }

  async function orgToken(owner: { cookie: string; orgId: string }): Promise<string> {
    const res = await call("/api/GenerateOrgToken", { orgId: owner.orgId }, { cookie: owner.cookie });
    if (res.status !== 200) throw new Error(`org token: ${res.status}`);
    return res.body.token;
  }

  /** Ingest as the publish socket does: through the sinks, then written. */
  const searchTexts = new SearchTexts();
  async function ingest(namespaceId: string, events: TracedEvent[]): Promise<void> {
    // As the server's ingest does before the sinks: the search fields are its own.
    for (const event of events) searchTexts.fill(event);
    sinks.accept({ namespaceId, linkId: null }, events);
    await attached?.sink.flush();
  }

  return {
    app,
    config,
    db: database.db,
    store,
    workers,
    sinks,
    base,
    port,
    dataDir,
    call,
    user,
    onboardedUser,
    namespaceToken,
    orgToken,
    ingest,
    /** Writes what the store sink has batched (it flushes every second on its own). */
    flush: async () => {
      await attached?.sink.flush();
    },
    close: async () => {
      await app.stop(true);
      await runtime.close();
      await store?.close();
      await database.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

export type TunnelServer = Awaited<ReturnType<typeof startTunnelServer>>;
