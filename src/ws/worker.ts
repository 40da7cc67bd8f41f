import type { ServerWebSocket } from "bun";
import { Elysia } from "elysia";
import { principalFromUpgrade } from "~/api/plugins/auth.ts";
import type { GrantedSockets } from "~/engines/access/granted-sockets.ts";
import type { RemoteWorker, WorkerRegistry } from "~/engines/workers/worker-registry.ts";
import { AppError } from "~/lib/errors.ts";
import { workerPath } from "~/lib/protocol/tunnel.ts";
import type { ServiceContext } from "~/services/context.ts";

/**
 * /api/WorkerConnect: a self-hosted worker (`tapscope worker --token <org worker token>`) connects out to
 * the server here. The server sends it request frames (inserts and queries for its org's namespaces) and
 * it answers with result frames; text "ping" is its heartbeat (lastSeenWorkerTime). Deleting its token sends
 * it away and hands the org's events back to the server's store.
 */
export function workerSocket({ ctx, workers, sockets }: { ctx: ServiceContext; workers: WorkerRegistry; sockets: GrantedSockets }) {
  const connected = new WeakMap<object, { worker: RemoteWorker; unregister: () => void }>();

  return new Elysia({ name: "ws-worker" })
    .resolve(async ({ request, path }) => {
      if (path !== workerPath) return {};
      const principal = await principalFromUpgrade({ ctx, request });
      if (!principal) throw new AppError("UNAUTHORIZED", "an org worker token is required");
      if (principal.kind !== "orgToken") throw new AppError("FORBIDDEN", "forbidden: workers connect with an org worker token");
      return { workerOrgId: principal.orgId, workerTokenId: principal.tokenId };
    })
    .ws(workerPath, {
      maxPayloadLength: 256 * 1024 * 1024,
      open(ws) {
        const raw = ws.raw as ServerWebSocket<unknown>;
        const orgId = (ws.data as { workerOrgId: string }).workerOrgId;
        const worker = workers.connect(orgId, {
          send: (bytes) => {
            raw.sendBinary(bytes);
          },
          close: (code, reason) => raw.close(code, reason),
        });
        const tokenId = (ws.data as { workerTokenId: string }).workerTokenId;
        const unregister = sockets.register([{ kind: "orgToken", tokenId }], {
          close: (code, reason) => {
            workers.forget(orgId);
            raw.close(code, reason);
          },
        });
        connected.set(raw, { worker, unregister });
        raw.sendText(JSON.stringify({ type: "ready", orgId }));
      },
      message(ws, message) {
        const worker = connected.get(ws.raw)?.worker;
        if (!worker) return;
        if (message instanceof Uint8Array) {
          worker.received(message);
          return;
        }
        // Heartbeat (any text).
        workers.seen(worker.orgId);
        ws.raw.sendText("pong");
      },
      close(ws) {
        const entry = connected.get(ws.raw);
        if (!entry) return;
        connected.delete(ws.raw);
        entry.unregister();
        workers.disconnect(entry.worker);
      },
    });
}
