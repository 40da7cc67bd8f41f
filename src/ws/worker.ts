import type { ServerWebSocket } from "bun";
import { Elysia } from "elysia";
import { principalFromUpgrade } from "~/api/plugins/auth.ts";
import { AppError } from "~/lib/errors.ts";
import { workerPath } from "~/lib/protocol/tunnel.ts";
import type { ServiceContext } from "~/services/context.ts";
import { isOrgTokenActive } from "~/services/tunnel/is-org-token-active.ts";
import type { RemoteWorker, WorkerRegistry } from "~/services/tunnel/worker-registry.ts";

/**
 * /api/WorkerConnect: a self-hosted worker (`tapscope worker --token <org worker token>`) connects out to
 * the server here. The server sends it request frames (inserts and queries for its org's namespaces) and
 * it answers with result frames; text "ping" is its heartbeat (lastSeenWorkerTime).
 */
export function workerSocket({ ctx, workers }: { ctx: ServiceContext; workers: WorkerRegistry }) {
  const connected = new WeakMap<object, RemoteWorker>();
  const tokens = new WeakMap<object, string>();

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
        connected.set(raw, worker);
        tokens.set(raw, (ws.data as { workerTokenId: string }).workerTokenId);
        raw.sendText(JSON.stringify({ type: "ready", orgId }));
      },
      message(ws, message) {
        const worker = connected.get(ws.raw);
        if (!worker) return;
        if (message instanceof Uint8Array) {
          worker.received(message);
          return;
        }
        // Heartbeat (any text): the worker is alive, if its token still is.
        const raw = ws.raw as ServerWebSocket<unknown>;
        const tokenId = tokens.get(raw) ?? "";
        void isOrgTokenActive({ ctx, tokenId })
          .then((isActive) => {
            if (!isActive) {
              workers.forget(worker.orgId);
              raw.close(4401, "worker token deleted");
              return;
            }
            workers.seen(worker.orgId);
            raw.sendText("pong");
          })
          .catch(() => {});
      },
      close(ws) {
        const worker = connected.get(ws.raw);
        if (!worker) return;
        connected.delete(ws.raw);
        workers.disconnect(worker);
      },
    });
}
