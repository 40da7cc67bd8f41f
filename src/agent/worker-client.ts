import {
  decodeRequest,
  encodeResult,
  errorResult,
  splitFrame,
  TunnelProtocolError,
  workerLimits,
  workerPath,
} from "~/lib/protocol/tunnel.ts";
import { isUuid } from "~/lib/server/ids.ts";
import { log } from "~/lib/server/logger.ts";
import { websocketUrl } from "~/lib/websocket-url.ts";
import { executeRequest } from "~/services/tunnel/execute-request.ts";
import type { EventStore } from "~/store/types.ts";

export type WorkerClientOptions = {
  /** The server's base URL (http[s]://...). */
  server: string;
  /** An org worker token (tso_...). */
  token: string;
  store: EventStore;
  heartbeatMs?: number;
  reconnectMinMs?: number;
  reconnectMaxMs?: number;
  onStatus?: (status: "connected" | "disconnected", detail?: string) => void;
  /** The server sent this worker away for good (another worker of the org took over): it stops. */
  onReplaced?: () => void;
};

export type WorkerClient = { stop(): void; readonly isConnected: boolean };

/**
 * The self-hosted worker's side: connects out to the server, runs the requests the server sends (inserts
 * and queries for its org's namespaces) against the local store, answers each, heartbeats, and reconnects
 * with exponential backoff (with jitter) whenever the connection drops.
 */
export function startWorkerClient(options: WorkerClientOptions): WorkerClient {
  const url = websocketUrl(options.server, workerPath);
  const minMs = options.reconnectMinMs ?? 500;
  const maxMs = options.reconnectMaxMs ?? 30_000;
  let backoff = minMs;
  let ws: WebSocket | null = null;
  let isStopped = false;
  let replies = 0;
  let isConnected = false;
  let heartbeat: ReturnType<typeof setInterval> | null = null;
  let retry: ReturnType<typeof setTimeout> | null = null;

  async function handle(socket: WebSocket, bytes: Uint8Array): Promise<void> {
    let reply: Uint8Array;
    try {
      const request = await decodeRequest(bytes);
      const namespaceId = request.tags.namespaceId;
      if (!isUuid(namespaceId)) {
        reply = encodeResult(
          errorResult(request.queryId, {
            tunnelError: "request without a namespace",
          }),
        );
      } else {
        const role = request.want.kind === "insert" ? "INSERT" : "SELECT";
        reply = encodeResult(
          await executeRequest({
            store: options.store,
            namespaceId,
            role,
            request,
          }),
        );
      }
    } catch (err) {
      reply = encodeResult(
        errorResult(err instanceof TunnelProtocolError ? err.queryId : "", {
          tunnelError: err instanceof TunnelProtocolError ? err.message : "malformed request",
        }),
      );
    }
    // A result bigger than the server takes in one frame goes in parts, back to back (nothing interleaves them).
    const parts = splitFrame(reply, workerLimits.partBytes, String(++replies));
    for (const part of parts) if (socket.readyState === WebSocket.OPEN) socket.send(part);
  }

  function schedule(): void {
    if (isStopped) return;
    const wait = Math.min(maxMs, backoff) * (0.75 + Math.random() * 0.5);
    backoff = Math.min(maxMs, backoff * 2);
    retry = setTimeout(connect, wait);
  }

  function connect(): void {
    if (isStopped) return;
    const socket = new WebSocket(url, {
      headers: { authorization: `Bearer ${options.token}` },
    } as unknown as string[]);
    socket.binaryType = "arraybuffer";
    ws = socket;
    socket.onopen = () => {
      isConnected = true;
      backoff = minMs;
      options.onStatus?.("connected");
      heartbeat = setInterval(() => {
        if (socket.readyState === WebSocket.OPEN) socket.send("ping");
      }, options.heartbeatMs ?? 30_000);
    };
    socket.onmessage = (ev) => {
      if (typeof ev.data === "string") return;
      void handle(socket, new Uint8Array(ev.data as ArrayBuffer)).catch((err) => log.error("worker request failed", { err }));
    };
    socket.onclose = (ev) => {
      if (heartbeat) clearInterval(heartbeat);
      heartbeat = null;
      const wasConnected = isConnected;
      isConnected = false;
      if (ws === socket) ws = null;
      if (ev.code === 4409) {
        // Two workers for one org would take turns replacing each other; the newer one keeps the org.
        isStopped = true;
        options.onReplaced?.();
        return;
      }
      if (wasConnected || !isStopped) options.onStatus?.("disconnected", `${ev.code}${ev.reason ? ` ${ev.reason}` : ""}`);
      schedule();
    };
    socket.onerror = () => {
      // onclose follows and reconnects.
    };
  }

  connect();
  return {
    stop() {
      isStopped = true;
      if (retry) clearTimeout(retry);
      if (heartbeat) clearInterval(heartbeat);
      ws?.close(1000, "worker stopping");
    },
    get isConnected() {
      return isConnected;
    },
  };
}
