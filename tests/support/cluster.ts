import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openDatabase } from "#db/client.ts";
import { memberships, namespaceMembers, namespaces, namespaceTokens, orgs, orgTokens, sessions, users } from "#db/schema/index.ts";
import { connectRedisBroker } from "~/engines/cluster/broker.ts";
import { parseConfig } from "~/lib/server/env.ts";
import { createRuntime, type Runtime } from "~/runtime.ts";
import { grantsOf } from "~/services/access/grants.ts";
import { newToken } from "~/services/auth/token-format.ts";
import { issueSubscriberTicket } from "~/services/live/subscriber-ticket.ts";
import type { EventStore } from "~/store/types.ts";
import { killWatched } from "./clickhouse.ts";
import { freePort } from "./ports.ts";

/** A process the tests own, gone with the test process (a watchdog shell), killable and restartable on the same port. */
export type Service = { port: number; url: string; kill: () => Promise<void>; restart: () => Promise<void>; stop: () => void };

async function supervised(
  name: string,
  command: (dir: string, port: number) => string[],
  ready: (port: number) => Promise<boolean>,
): Promise<Service> {
  const dir = mkdtempSync(join(tmpdir(), `tapscope-${name}-`));
  const port = await freePort();
  let child: ReturnType<typeof Bun.spawn> | undefined;
  const watchdog = [
    '"$@" >"$DIR/log" 2>&1 & p=$!',
    'while kill -0 "$PARENT" 2>/dev/null && kill -0 "$p" 2>/dev/null; do sleep 0.2; done',
    'kill -9 "$p" 2>/dev/null',
  ].join("\n");
  const launch = async () => {
    child = Bun.spawn(["sh", "-c", watchdog, "sh", ...command(dir, port)], {
      env: { ...process.env, DIR: dir, PARENT: String(process.pid) },
      stdout: "ignore",
      stderr: "ignore",
    });
    child.unref();
    const deadline = Date.now() + 20_000;
    while (Date.now() < deadline) {
      if (await ready(port)) return;
      await Bun.sleep(100);
    }
    throw new Error(
      `${name} did not start: ${await Bun.file(join(dir, "log"))
        .text()
        .catch(() => "")}`,
    );
  };
  const kill = async () => {
    if (!child) return;
    killWatched(child);
    await child.exited;
    child = undefined;
  };
  const stop = () => {
    if (child) killWatched(child);
    rmSync(dir, { recursive: true, force: true });
  };
  process.once("exit", stop);
  await launch();
  return { port, url: `http://127.0.0.1:${port}`, kill, restart: launch, stop };
}

async function answers(port: number, send: string, expect: string): Promise<boolean> {
  return new Promise<boolean>((resolve) => {
    let text = "";
    Bun.connect({
      hostname: "127.0.0.1",
      port,
      socket: {
        open: (s) => void s.write(send),
        data: (s, d) => {
          text += d.toString();
          if (text.includes(expect)) {
            s.end();
            resolve(true);
          }
        },
        close: () => resolve(text.includes(expect)),
        error: () => resolve(false),
        connectError: () => resolve(false),
      },
    }).catch(() => resolve(false));
  });
}

/** Debian's redis-server, in memory only. */
export function startRedis(): Promise<Service & { brokerUrl: string }> {
  return supervised(
    "redis",
    (_dir, port) => ["redis-server", "--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
    (port) => answers(port, "PING\r\n", "+PONG"),
  ).then((s) => ({ ...s, brokerUrl: `redis://127.0.0.1:${s.port}` }));
}

/**
 * One server node's engines in this process, wired by createRuntime as `tapscope server` wires them, on its own
 * connection to Redis and its own in-memory database (no store): two of these are two nodes of a cluster. With
 * `databaseUrl` and `store` the nodes share a PostgreSQL database and an event store as a cluster's nodes do.
 */
export async function startNodeRuntime(
  brokerUrl: string,
  env: Record<string, string> = {},
  shared: { databaseUrl?: string; store?: EventStore } = {},
): Promise<{ runtime: Runtime; stop: () => Promise<void> }> {
  const broker = await connectRedisBroker(brokerUrl);
  const database = await openDatabase({ databaseUrl: shared.databaseUrl });
  const dataDir = mkdtempSync(join(tmpdir(), "tapscope-node-"));
  const config = parseConfig({ DATA_DIR: dataDir, SESSION_SECRET: "cluster-node-secret-0123456789abcdef", ...env });
  const runtime = createRuntime({ config, db: database.db, broker, store: shared.store });
  await runtime.start();
  let isStopped = false;
  return {
    runtime,
    stop: async () => {
      if (isStopped) return;
      isStopped = true;
      await runtime.close();
      await database.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** Debian's haproxy in front of the nodes: WebSockets tunnelled, health-checked on /api/health. */
export function startHaproxy(backends: number[], balance: "roundrobin" | "first" = "roundrobin"): Promise<Service> {
  return supervised(
    "haproxy",
    (dir, port) => {
      const config = [
        "global",
        "  maxconn 4096",
        "defaults",
        "  mode http",
        "  timeout connect 2s",
        "  timeout client 60s",
        "  timeout server 60s",
        "  timeout tunnel 1h",
        "  option redispatch",
        "  retries 2",
        "frontend web",
        `  bind 127.0.0.1:${port}`,
        "  default_backend nodes",
        "backend nodes",
        `  balance ${balance}`,
        "  option httpchk",
        "  http-check send meth GET uri /api/health ver HTTP/1.1 hdr Host localhost",
        ...backends.map((p, i) => `  server node${i + 1} 127.0.0.1:${p} check inter 300 fall 2 rise 1 maxconn 1000`),
        "",
      ].join("\n");
      writeFileSync(join(dir, "haproxy.cfg"), config);
      return ["haproxy", "-db", "-f", join(dir, "haproxy.cfg")];
    },
    (port) => answers(port, "GET /api/health HTTP/1.0\r\nHost: localhost\r\n\r\n", "HTTP/1."),
  );
}

/** An org with a namespace, its publishing token, and a member with a session (for live tickets), in PostgreSQL. */
export async function seedOrg(databaseUrl: string, name = "cluster") {
  const database = await openDatabase({ databaseUrl });
  try {
    const db = database.db;
    const [org] = await db.insert(orgs).values({ name }).returning();
    const [ns] = await db.insert(namespaces).values({ orgId: org!.id, name }).returning();
    const minted = newToken("namespace");
    await db.insert(namespaceTokens).values({ namespaceId: ns!.id, tokenHash: minted.hash, suffix: minted.suffix });
    const [user] = await db
      .insert(users)
      .values({ email: `${name}-${crypto.randomUUID()}@example.com` })
      .returning();
    await db.insert(memberships).values({ orgId: org!.id, userId: user!.id });
    await db.insert(namespaceMembers).values({ namespaceId: ns!.id, userId: user!.id, hasWrite: true });
    const worker = newToken("org");
    await db.insert(orgTokens).values({ orgId: org!.id, tokenHash: worker.hash, suffix: worker.suffix });
    const [session] = await db
      .insert(sessions)
      .values({ userId: user!.id, expiresAt: new Date(Date.now() + 86_400_000) })
      .returning();
    return {
      orgId: org!.id,
      namespaceId: ns!.id,
      token: minted.token,
      /** An org token, for `tapscope worker`. */
      orgToken: worker.token,
      /** A live socket URL for this namespace on the node at `endpoint`, as JoinSubscriber would hand out. */
      liveUrl: (endpoint: string, sessionSecret: string) => {
        const principal = { kind: "user" as const, userId: user!.id, email: user!.email, sessionId: session!.id };
        const ticket = issueSubscriberTicket(
          sessionSecret,
          { userId: user!.id, namespaceId: ns!.id, grants: grantsOf(principal, { namespaceId: ns!.id }) },
          new Date(),
        );
        return `${endpoint.replace(/^http/, "ws")}/api/LiveSubscribe?ticket=${encodeURIComponent(ticket)}`;
      },
    };
  } finally {
    await database.close();
  }
}
