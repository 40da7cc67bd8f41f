import { type CapturedEvent, toTracedEvent } from "~/lib/protocol/event.ts";
import { EVENT_BATCH_FORMAT, encodeEventBatch } from "~/lib/protocol/event-batch.ts";
import type { JoinPublisherResponse } from "~/lib/protocol/api/publish.ts";
import type { PublishServerMessage } from "~/lib/protocol/publish.ts";

/**
 * The capture CLI's publisher: JoinPublisher, then one WebSocket; events batched by count, size or
 * time; reconnect with backoff (joining again for a fresh ticket); a bounded queue. `send` is O(1) and
 * never waits: when the server is slow or away, events are dropped and counted, never the program slowed.
 * Batches go as binary event batches (event-batch.ts, bodies as raw bytes) to a server that announces the
 * format in its "ready" message, and as JSON to an older one.
 */
export type PublisherOptions = {
  endpoint: string;
  token?: string;
  linkId?: string;
  service?: string;
  /** Events waiting to be sent; beyond this new events are dropped. */
  maxQueue?: number;
  /**
   * Estimated bytes of the events waiting to be sent (bodies are the kept samples, up to 64 KiB each way by
   * default); beyond this new events are dropped, so a server that is away costs bounded memory, not 10,000 x 128 KiB.
   */
  maxQueuedBytes?: number;
  batchMaxEvents?: number;
  batchMaxBytes?: number;
  batchIntervalMs?: number;
  /** Bytes the socket may hold unsent before we stop writing (the server is slow). */
  maxBufferedBytes?: number;
  reconnectMinMs?: number;
  reconnectMaxMs?: number;
  /** Something the user should know: events refused or rate-limited, connection lost or back. Rate-limited to one per kind per 5 s. */
  onNotice?: (kind: NoticeKind, message: string) => void;
  /** Called after every successful join (the first, and each reconnect). */
  onJoin?: (info: JoinInfo) => void;
};

export type NoticeKind = "rate-limited" | "store-dropped" | "refused" | "disconnected" | "reconnected" | "expired" | "join-failed";

export type JoinInfo = { linkId?: string; linkUrl?: string; namespaceId?: string; expiresAt?: string };

export type PublisherStats = {
  /** Accepted by the server (acknowledged). */
  sent: number;
  /** Never delivered: queue full, connection lost with the batch in flight, not flushed in time. */
  dropped: number;
  /** Refused by the server's validation. */
  refused: number;
  /** Over the namespace's rate limit. */
  rateLimited: number;
  /** Accepted (and shown live) but not stored: the server's store was over its limit or behind. */
  storeDropped: number;
  queued: number;
  inFlight: number;
  isConnected: boolean;
  reconnects: number;
};

export type Publisher = {
  join(): Promise<JoinInfo>;
  send(event: CapturedEvent): void;
  flush(): void;
  /** Sends what is pending within timeoutMs, then closes; what is left is counted as dropped. */
  close(timeoutMs?: number): Promise<PublisherStats>;
  stats(): PublisherStats;
};

export class JoinError extends Error {
  override name = "JoinError";
  constructor(
    message: string,
    readonly status: number,
  ) {
    super(message);
  }
}

const encoder = new TextEncoder();

export function createPublisher(options: PublisherOptions): Publisher {
  const maxQueue = options.maxQueue ?? 10_000;
  const maxQueuedBytes = options.maxQueuedBytes ?? 256 * 1024 * 1024;
  const batchMaxEvents = options.batchMaxEvents ?? 500;
  const batchMaxBytes = options.batchMaxBytes ?? 1024 * 1024;
  const batchIntervalMs = options.batchIntervalMs ?? 50;
  const maxBufferedBytes = options.maxBufferedBytes ?? 8 * 1024 * 1024;
  const reconnectMinMs = options.reconnectMinMs ?? 250;
  const reconnectMaxMs = options.reconnectMaxMs ?? 10_000;

  let queue: CapturedEvent[] = [];
  /** Each queued event's estimated size, computed once in send. */
  let sizes: number[] = [];
  let queueHead = 0;
  let queuedBytes = 0;
  const inFlight = new Map<number, number>();
  let seq = 0;
  let ws: WebSocket | null = null;
  let isReady = false;
  let isClosing = false;
  let isStopped = false;
  let linkId = options.linkId;
  let batchTimer: ReturnType<typeof setTimeout> | null = null;
  let reconnectTimer: ReturnType<typeof setTimeout> | null = null;
  let pingTimer: ReturnType<typeof setInterval> | null = null;
  let backoff = reconnectMinMs;
  let maxMessageBytes = 4 * 1024 * 1024;
  let isBinary = false;
  let hasConnectedOnce = false;
  let drainWaiters: Array<() => void> = [];
  const lastNotice = new Map<NoticeKind, number>();
  const counters = { sent: 0, dropped: 0, refused: 0, rateLimited: 0, storeDropped: 0, reconnects: 0 };

  const queued = () => queue.length - queueHead;
  const inFlightCount = () => {
    let n = 0;
    for (const c of inFlight.values()) n += c;
    return n;
  };

  function notice(kind: NoticeKind, message: string): void {
    const now = Date.now();
    if ((lastNotice.get(kind) ?? 0) + 5000 > now) return;
    lastNotice.set(kind, now);
    try {
      options.onNotice?.(kind, message);
    } catch {
      // A notice is best effort.
    }
  }

  async function joinOnce(): Promise<{ info: JoinInfo; websocketUrl: string }> {
    const headers: Record<string, string> = { "content-type": "application/json" };
    if (options.token) headers.authorization = `Bearer ${options.token}`;
    const res = await fetch(`${options.endpoint}/api/JoinPublisher`, {
      method: "POST",
      headers,
      body: JSON.stringify(linkId ? { linkId } : {}),
      signal: AbortSignal.timeout(10_000),
    });
    const body = (await res.json().catch(() => ({}))) as Partial<JoinPublisherResponse>;
    if (!res.ok || !body.websocketUrl) throw new JoinError(body.error ?? `JoinPublisher answered ${res.status}`, res.status);
    if (body.linkId) linkId = body.linkId;
    const info: JoinInfo = { linkId: body.linkId, linkUrl: body.linkUrl, namespaceId: body.namespaceId, expiresAt: body.expiresAt };
    return { info, websocketUrl: body.websocketUrl };
  }

  function connect(websocketUrl: string): void {
    const socket = new WebSocket(websocketUrl);
    socket.binaryType = "arraybuffer";
    ws = socket;
    socket.onmessage = (ev) => {
      let msg: PublishServerMessage;
      try {
        msg = JSON.parse(typeof ev.data === "string" ? ev.data : new TextDecoder().decode(ev.data as ArrayBuffer));
      } catch {
        return;
      }
      onServerMessage(msg);
    };
    socket.onclose = () => onSocketGone(socket);
    socket.onerror = () => {
      // onclose follows.
    };
  }

  function onServerMessage(msg: PublishServerMessage): void {
    switch (msg.type) {
      case "ready":
        isReady = true;
        backoff = reconnectMinMs;
        maxMessageBytes = msg.maxMessageBytes;
        isBinary = msg.formats?.includes(EVENT_BATCH_FORMAT) === true;
        if (hasConnectedOnce) notice("reconnected", "reconnected to the Tapscope server");
        hasConnectedOnce = true;
        pump();
        break;
      case "ack": {
        const count = inFlight.get(msg.seq) ?? 0;
        inFlight.delete(msg.seq);
        counters.sent += msg.accepted;
        counters.refused += msg.refused;
        counters.rateLimited += msg.rateLimited;
        // Anything the server did not account for was lost.
        counters.dropped += Math.max(0, count - msg.accepted - msg.refused - msg.rateLimited);
        if (msg.rateLimited > 0) notice("rate-limited", `the server's rate limit dropped ${msg.rateLimited} events`);
        if (msg.storeDropped) {
          counters.storeDropped += msg.storeDropped;
          notice("store-dropped", `the server could not store ${msg.storeDropped} events (shown live only)`);
        }
        if (msg.refused > 0) notice("refused", `the server refused ${msg.refused} events${msg.errors?.length ? `: ${msg.errors[0]}` : ""}`);
        pump();
        break;
      }
      case "error": {
        if (msg.seq !== null) {
          counters.refused += inFlight.get(msg.seq) ?? 0;
          inFlight.delete(msg.seq);
        }
        notice("refused", `the server refused a message: ${msg.message}`);
        pump();
        break;
      }
      case "expired":
        notice("expired", "the shared link expired; events are no longer published");
        stop();
        break;
      case "pong":
        break;
    }
  }

  function onSocketGone(socket: WebSocket): void {
    if (ws !== socket) return;
    ws = null;
    isReady = false;
    // Batches without an answer may or may not have arrived: counted as dropped, never resent twice.
    counters.dropped += inFlightCount();
    inFlight.clear();
    wakeDrainWaiters();
    if (isStopped || isClosing) return;
    if (hasConnectedOnce) notice("disconnected", "lost the connection to the Tapscope server; reconnecting (events are dropped meanwhile when the queue is full)");
    scheduleReconnect();
  }

  function scheduleReconnect(): void {
    if (reconnectTimer || isStopped || isClosing) return;
    const delay = Math.round(backoff * (0.75 + Math.random() * 0.5));
    backoff = Math.min(reconnectMaxMs, backoff * 2);
    reconnectTimer = setTimeout(() => {
      reconnectTimer = null;
      counters.reconnects++;
      joinOnce()
        .then(({ info, websocketUrl }) => {
          if (isStopped || isClosing) return;
          options.onJoin?.(info);
          connect(websocketUrl);
        })
        .catch((err: unknown) => {
          if (isRefusal(err)) {
            notice("join-failed", `the server refused this publisher: ${(err as Error).message}`);
            stop();
            return;
          }
          scheduleReconnect();
        });
    }, delay);
    unref(reconnectTimer);
  }

  function stop(): void {
    isStopped = true;
    counters.dropped += queued();
    queue = [];
    sizes = [];
    queueHead = 0;
    queuedBytes = 0;
    if (ws) {
      counters.dropped += inFlightCount();
      inFlight.clear();
      ws.close(1000);
      ws = null;
    }
    clearTimers();
    wakeDrainWaiters();
  }

  function clearTimers(): void {
    if (batchTimer) clearTimeout(batchTimer);
    if (reconnectTimer) clearTimeout(reconnectTimer);
    if (pingTimer) clearInterval(pingTimer);
    batchTimer = reconnectTimer = pingTimer = null;
  }

  function wakeDrainWaiters(): void {
    const waiters = drainWaiters;
    drainWaiters = [];
    for (const w of waiters) w();
  }

  /** Writes batches while the socket is ready and not backed up. */
  function pump(): void {
    if (batchTimer) {
      clearTimeout(batchTimer);
      batchTimer = null;
    }
    while (ws && isReady && queued() > 0 && ws.bufferedAmount < maxBufferedBytes) {
      const batch = takeBatch();
      compact();
      sendBatch(ws, batch);
    }
    if (queued() === 0 && inFlight.size === 0) wakeDrainWaiters();
  }

  /** The next events from the queue, up to the batch's count and (estimated) size; at least one. */
  function takeBatch(): CapturedEvent[] {
    const budget = Math.min(batchMaxBytes, maxMessageBytes);
    const batch: CapturedEvent[] = [];
    let bytes = 0;
    while (queueHead < queue.length && batch.length < batchMaxEvents) {
      const event = queue[queueHead]!;
      const size = sizes[queueHead]!;
      if (bytes + size > budget && batch.length > 0) break;
      batch.push(event);
      bytes += size;
      queuedBytes -= size;
      queueHead++;
    }
    return batch;
  }

  /** Encodes and sends; a message over the server's limit is split, and a single event over it dropped. */
  function sendBatch(socket: WebSocket, events: CapturedEvent[]): void {
    const n = ++seq;
    const message = isBinary ? encodeEventBatch(n, events) : jsonBatch(n, events);
    if (message.byteLength > maxMessageBytes) {
      if (events.length === 1) {
        counters.dropped++;
        return;
      }
      const half = events.length >> 1;
      sendBatch(socket, events.slice(0, half));
      sendBatch(socket, events.slice(half));
      return;
    }
    inFlight.set(n, events.length);
    socket.send(message);
  }

  function compact(): void {
    if (queueHead === queue.length) {
      queue = [];
      sizes = [];
      queueHead = 0;
    } else if (queueHead > 4096) {
      queue = queue.slice(queueHead);
      sizes = sizes.slice(queueHead);
      queueHead = 0;
    }
  }

  function scheduleBatch(): void {
    if (batchTimer || !isReady) return;
    batchTimer = setTimeout(() => {
      batchTimer = null;
      pump();
    }, batchIntervalMs);
    unref(batchTimer);
  }

  return {
    async join() {
      if (!pingTimer) {
        pingTimer = setInterval(() => {
          if (ws && isReady && inFlight.size === 0 && queued() === 0) ws.send(encoder.encode(`{"type":"ping","seq":${++seq}}`));
        }, 15_000);
        unref(pingTimer);
      }
      try {
        const { info, websocketUrl } = await joinOnce();
        options.onJoin?.(info);
        connect(websocketUrl);
        return info;
      } catch (err) {
        // A refused token or link will not get better; a server that is away might.
        if (isRefusal(err)) stop();
        else scheduleReconnect();
        throw err;
      }
    },

    send(event) {
      const size = estimateBytes(event);
      if (isStopped || isClosing || queued() >= maxQueue || queuedBytes + size > maxQueuedBytes) {
        counters.dropped++;
        return;
      }
      queue.push(event);
      sizes.push(size);
      queuedBytes += size;
      if (queued() >= batchMaxEvents) pump();
      else scheduleBatch();
    },

    flush: pump,

    async close(timeoutMs = 2000) {
      if (isStopped) return this.stats();
      isClosing = true;
      pump();
      const deadline = Date.now() + timeoutMs;
      while (!isStopped && (queued() > 0 || inFlight.size > 0) && ws && Date.now() < deadline) {
        await new Promise<void>((resolve) => {
          drainWaiters.push(resolve);
          setTimeout(resolve, Math.max(1, Math.min(50, deadline - Date.now())));
        });
        pump();
      }
      stop();
      return this.stats();
    },

    stats: () => ({
      ...counters,
      queued: queued(),
      inFlight: inFlightCount(),
      isConnected: ws !== null && isReady,
    }),
  };
}

/**
 * Roughly what an event carries (its variable-length parts, written out), for batching by size. Counted as if
 * nothing were de-duplicated, so a batch also stays under the server's maxBatchExpandedChars. Tolerates values
 * of the wrong type (the encoder writes them as neutral values): nothing here may throw into `send`.
 */
function estimateBytes(e: CapturedEvent): number {
  let bytes =
    320 +
    bodyBytes(e.http_req_body) +
    bodyBytes(e.http_resp_body) +
    chars(e.http_req_path) +
    chars(e.process_command_line) +
    chars(e.service) +
    chars(e.hostname) +
    chars(e.http_req_host) +
    chars(e.http_req_content_type) +
    chars(e.http_resp_content_type);
  for (const headers of [e.http_req_headers, e.http_resp_headers]) {
    if (!Array.isArray(headers)) continue;
    for (const pair of headers) bytes += 8 + (Array.isArray(pair) ? chars(pair[0]) + chars(pair[1]) : 0);
  }
  if (typeof e.tags === "object" && e.tags !== null) for (const key of Object.keys(e.tags)) bytes += key.length + chars(e.tags[key]);
  return bytes;
}

const chars = (value: unknown) => (typeof value === "string" ? value.length : 0);
const bodyBytes = (body: unknown) => (body instanceof Uint8Array ? body.byteLength : chars(body));

/** The JSON message of a server that does not read binary batches: bodies as base64, as TracedEvent has them. */
function jsonBatch(seq: number, events: CapturedEvent[]): Uint8Array {
  const parts = events.map((e) => JSON.stringify(toTracedEvent(e)));
  return encoder.encode(`{"type":"events","seq":${seq},"events":[${parts.join(",")}]}`);
}

/** A refused token or link (4xx): retrying will not help. Anything else (no answer, 5xx) is retried. */
export function isRefusal(err: unknown): boolean {
  return err instanceof JoinError && (err.status === 400 || err.status === 401 || err.status === 403 || err.status === 404);
}

function unref(timer: unknown): void {
  (timer as { unref?: () => void }).unref?.();
}
