import { randomUUID } from "node:crypto";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openDatabase } from "#db/client.ts";
import { namespaces, namespaceTokens, orgs, orgTokens } from "#db/schema/index.ts";
import type { EventTarget } from "~/engines/ingest/sinks.ts";
import type { TracedEvent } from "~/lib/protocol/event.ts";
import { parseConfig } from "~/lib/server/env.ts";
import { setLogSink } from "~/lib/server/logger.ts";
import { createRuntime } from "~/runtime.ts";
import { createApp } from "~/server.ts";
import { newToken } from "~/services/auth/token-format.ts";
import { tracedEvent } from "./event-factory.ts";

/** A real server (createApp on a fresh PGlite) listening on a free loopback port, with a sink that records. */
export async function startServer(env: Record<string, string> = {}) {
  // Refusals are logged at info by design; keep this suite's output readable, and give the sink back on stop.
  const restoreLog = setLogSink(() => {});
  const database = await openDatabase({});
  const config = parseConfig({
    DATA_DIR: mkdtempSync(join(tmpdir(), "tapscope-publish-")),
    SESSION_SECRET: "publish-test-secret-0123456789abcdef",
    PUBLIC_URL: "http://127.0.0.1:1",
    ...env,
  });
  const received: Array<{ target: EventTarget; events: TracedEvent[] }> = [];
  const runtime = createRuntime({ config, db: database.db });
  const { sinks, ctx } = runtime;
  sinks.add({ accept: (target, events) => received.push({ target, events: [...events] }) });
  const app = createApp(runtime);
  app.listen({ port: 0, hostname: "127.0.0.1" });
  const port = app.server!.port;
  // The public URL is only known once listening; services read it per call.
  config.publicUrl = `http://127.0.0.1:${port}`;

  async function namespaceWithToken() {
    const [org] = await database.db.insert(orgs).values({ name: "acme" }).returning();
    const [ns] = await database.db
      .insert(namespaces)
      .values({ orgId: org!.id, name: `ns-${randomUUID().slice(0, 8)}` })
      .returning();
    const { token, hash, suffix } = newToken("namespace");
    await database.db.insert(namespaceTokens).values({ namespaceId: ns!.id, tokenHash: hash, suffix });
    return { orgId: org!.id, namespaceId: ns!.id, token };
  }

  async function orgToken(orgId: string) {
    const { token, hash, suffix } = newToken("org");
    await database.db.insert(orgTokens).values({ orgId, tokenHash: hash, suffix });
    return token;
  }

  return {
    app,
    ctx,
    db: database.db,
    config,
    endpoint: config.publicUrl,
    received,
    sinks,
    events: () => received.flatMap((r) => r.events),
    ingest: runtime.ingest,
    namespaceWithToken,
    orgToken,
    stop: async () => {
      await app.stop(true);
      await runtime.close();
      await database.close();
      restoreLog();
    },
  };
}

export type TestServer = Awaited<ReturnType<typeof startServer>>;

/** A plausible event as the tracer makes it. */
export function sampleEvent(overrides: Partial<TracedEvent> = {}): TracedEvent {
  return tracedEvent({
    service: "test",
    hostname: "h",
    process_id: 1,
    process_executable_size: 100,
    http_client_addr: "127.0.0.1:5000",
    http_server_addr: "127.0.0.1:8000",
    http_duration: 1200,
    http_req_path: "/users/1",
    http_req_host: "localhost",
    http_req_headers: [["Host", "localhost"]],
    http_resp_headers: [["Content-Length", "2"]],
    timing_send: 10,
    timing_wait: 1000,
    timing_receive: 190,
    bytes_sent: 40,
    bytes_received: 60,
    ...overrides,
  });
}
