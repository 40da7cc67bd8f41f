import { Elysia } from "elysia";
import { credentialFromUpgrade } from "~/api/plugins/auth.ts";
import type { GrantedSockets } from "~/engines/access/granted-sockets.ts";
import type { RemoteWorker, WorkerRegistry } from "~/engines/workers/worker-registry.ts";
import { socketChannels } from "~/lib/protocol/sockets.ts";
import { FrameJoiner, TunnelProtocolError, workerLimits, workerPath } from "~/lib/protocol/tunnel.ts";
import { log } from "~/lib/server/logger.ts";
import { admitCaller } from "~/services/auth/admit-caller.ts";
import type { ServiceContext } from "~/services/context.ts";
import type { SocketChannel, SocketServer } from "./socket-server.ts";

/**
 * /api/WorkerConnect: a self-hosted worker (`tapscope worker --token <org worker token>`) connects out to
 * the server here. The server sends it request frames (inserts and queries for its org's namespaces) and
 * it answers with result frames; text "ping" is its heartbeat (lastSeenWorkerTime). Deleting its token sends
 * it away and hands the org's events back to the server's store.
 */
export function workerSocket({
  ctx,
  workers,
  sockets,
  server,
}: {
  ctx: ServiceContext;
  workers: WorkerRegistry;
  sockets: GrantedSockets;
  server: SocketServer;
}) {
  const connected = new WeakMap<object, { worker: RemoteWorker; unregister: () => void; parts: FrameJoiner }>();

  const channel: SocketChannel<{ orgId: string; tokenId: string }> = {
    kind: "worker",
    // Result frames, a bigger result in parts (joined below, up to workerLimits.maxResultBytes).
    maxMessageBytes: workerLimits.partBytes + 64 * 1024,
    open(raw, { orgId, tokenId }) {
      const worker = workers.connect(orgId, {
        send: (bytes) => {
          raw.sendBinary(bytes);
        },
        close: (code, reason) => raw.close(code, reason),
      });
      const unregister = sockets.register([{ kind: "orgToken", tokenId }], {
        close: (code, reason) => {
          workers.forget(orgId);
          raw.close(code, reason);
        },
      });
      connected.set(raw, { worker, unregister, parts: new FrameJoiner(workerLimits.maxResultBytes) });
      raw.sendText(JSON.stringify({ type: "ready", orgId }));
    },
    message(raw, frame) {
      const entry = connected.get(raw);
      if (!entry) return;
      const { worker } = entry;
      if (typeof frame !== "string") {
        let whole: Uint8Array | null;
        try {
          whole = entry.parts.push(frame);
        } catch (err) {
          if (!(err instanceof TunnelProtocolError)) throw err;
          log.warn("worker sent a bad result part", { orgId: worker.orgId, err: err.message });
          return;
        }
        if (whole) worker.received(whole);
        return;
      }
      // Heartbeat (any text).
      workers.seen(worker.orgId);
      raw.sendText("pong");
    },
    close(raw) {
      const entry = connected.get(raw);
      if (!entry) return;
      connected.delete(raw);
      entry.unregister();
      workers.disconnect(entry.worker);
    },
  };

  return new Elysia({ name: "ws-worker" })
    .resolve(async ({ request, path }) => {
      if (path !== workerPath) return {};
      const principal = admitCaller({
        callers: socketChannels.WorkerConnect.callers,
        credential: await credentialFromUpgrade({ ctx, request }),
        what: "WorkerConnect",
      });
      return { worker: { orgId: principal.orgId, tokenId: principal.tokenId } };
    })
    .get(workerPath, (c) => server.upgrade(c, channel, c.worker!));
}
