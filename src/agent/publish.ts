import { type CapturedEvent, toTracedEvent } from "~/lib/protocol/event.ts";
import { EVENT_BATCH_FORMAT, encodeEventBatch, setEventBatchResent, setEventBatchSeq } from "~/lib/protocol/event-batch.ts";
import type { PublishServerMessage } from "~/lib/protocol/publish.ts";
import { Backoff } from "./publisher/backoff.ts";
import { BatchQueue } from "./publisher/batch-queue.ts";
import { PublisherConnection } from "./publisher/connection.ts";
import { PublisherCounters } from "./publisher/counters.ts";
import { estimateBytes } from "./publisher/estimate-bytes.ts";
import { isRefusal, type JoinInfo } from "./publisher/join.ts";

export { isRefusal, JoinError, type JoinInfo } from "./publisher/join.ts";

/**
 * The capture CLI's publisher: JoinPublisher, then one WebSocket; events batched by count, size or
 * time; reconnect with backoff (joining again for a fresh ticket); a bounded queue. `send` is O(1) and
 * never waits: when the server is slow or away, events are dropped and counted, never the program slowed.
 * Batches go as binary event batches (event-batch.ts, bodies as raw bytes) to a server that announces the
 * format in its "ready" message, and as JSON to an older one.
 *
 * A batch is acknowledged once stored. To a server that announces `acceptsResent` (it drops what it already stored,
 * ADR 0025), binary batches are kept until then (up to maxUnackedBytes): when the connection goes (its node died, the
 * network broke) they are sent again, marked resent, first thing on the next connection to such a server; to any
 * other server, beyond the bound, or when the publisher stops first, they are counted as dropped.
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
  /**
   * Bytes of batches sent and not yet acknowledged that are kept to be sent again if the connection goes; batches
   * sent beyond it are not kept (counted dropped if their connection goes unanswered). Sending is not held up.
   */
  maxUnackedBytes?: number;
  reconnectMinMs?: number;
  reconnectMaxMs?: number;
  /** Something the user should know: events refused or rate-limited, connection lost or back. Rate-limited to one per kind per 5 s. */
  onNotice?: (kind: NoticeKind, message: string) => void;
  /** Called after every successful join (the first, and each reconnect). */
  onJoin?: (info: JoinInfo) => void;
  /** The server reads JSON batches only: batches encoded elsewhere (sendEncoded) cannot be sent, events must come instead. */
  onEncodedRefused?: () => void;
};

export type NoticeKind = "rate-limited" | "store-dropped" | "refused" | "disconnected" | "reconnected" | "expired" | "join-failed";

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

/** Events another thread already encoded as one binary batch (encodeEventBatch with SEQ_SET_LATER). */
export type EncodedEvents = { frame: Uint8Array; count: number };

type Queued = CapturedEvent | EncodedEvents;
const isEncoded = (item: Queued): item is EncodedEvents => "frame" in item && "count" in item;

export type Publisher = {
  join(): Promise<JoinInfo>;
  send(event: CapturedEvent): void;
  /** Events batched and encoded elsewhere (a relay thread): sent as their own message, as soon as the socket allows. */
  sendEncoded(events: EncodedEvents): void;
  flush(): void;
  /** Sends what is pending within timeoutMs, then closes; what is left is counted as dropped. */
  close(timeoutMs?: number): Promise<PublisherStats>;
  stats(): PublisherStats;
};

const encoder = new TextEncoder();

export function createPublisher(options: PublisherOptions): Publisher {
  const batchMaxEvents = options.batchMaxEvents ?? 500;
  const batchMaxBytes = options.batchMaxBytes ?? 1024 * 1024;
  const batchIntervalMs = options.batchIntervalMs ?? 50;
  const maxBufferedBytes = options.maxBufferedBytes ?? 8 * 1024 * 1024;
  const maxUnackedBytes = options.maxUnackedBytes ?? 64 * 1024 * 1024;

  const queue = new BatchQueue<Queued>(options.maxQueue ?? 10_000, options.maxQueuedBytes ?? 256 * 1024 * 1024, (item) =>
    isEncoded(item) ? item.frame.byteLength : estimateBytes(item),
  );
  const counters = new PublisherCounters();
  /** Events queued beyond one per queued item (an encoded batch is one item of `count` events). */
  let encodedExtra = 0;
  const backoff = new Backoff(options.reconnectMinMs ?? 250, options.reconnectMaxMs ?? 10_000);
  let seq = 0;
  let isClosing = false;
  let isStopped = false;
  let batchTimer: ReturnType<typeof setTimeout> | null = null;
  let pingTimer: ReturnType<typeof setInterval> | null = null;
  let maxMessageBytes = 4 * 1024 * 1024;
  let isBinary = false;
  /** The server drops what it already stored of a resent batch: batches are kept to be sent again. */
  let acceptsResent = false;
  let hasConnectedOnce = false;
  let drainWaiters: Array<() => void> = [];
  /** Binary batches sent and not yet answered, by seq: what is sent again after a reconnect. */
  const unacked = new Map<number, Uint8Array>();
  let unackedBytes = 0;
  /** After a lost connection: whether the unanswered batches go again on the next one. */
  let isResendDue = false;
  const lastNotice = new Map<NoticeKind, number>();

  const connection = new PublisherConnection(options, backoff, {
    onJoin: options.onJoin,
    canReconnect: () => !isStopped && !isClosing,
    onReady(ready, isReconnect) {
      maxMessageBytes = ready.maxMessageBytes;
      isBinary = ready.formats?.includes(EVENT_BATCH_FORMAT) === true;
      acceptsResent = isBinary && ready.acceptsResent === true;
      if (isReconnect) notice("reconnected", "reconnected to the Tapscope server");
      hasConnectedOnce = true;
      if (isResendDue) resend(acceptsResent);
      pump();
    },
    onMessage,
    onGone() {
      // Batches without an answer may or may not have arrived (or been stored): binary ones go again on the next
      // connection, marked so the server drops what it has; the others (JSON, to an older server) are counted dropped.
      for (const seq of counters.unansweredSeqs()) if (!unacked.has(seq)) counters.lostBatch(seq);
      isResendDue = unacked.size > 0;
      wakeDrainWaiters();
      if (isStopped || isClosing) return;
      if (hasConnectedOnce)
        notice(
          "disconnected",
          "lost the connection to the Tapscope server; reconnecting (events are dropped meanwhile when the queue is full)",
        );
    },
    onRefused(err) {
      notice("join-failed", `the server refused this publisher: ${err.message}`);
      stop();
    },
  });

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

  /** Sends the batches left unanswered by the lost connection again, or gives them up. */
  function resend(isAccepted: boolean): void {
    isResendDue = false;
    const ws = connection.readySocket;
    for (const seq of counters.unansweredSeqs()) {
      const frame = unacked.get(seq);
      if (!isAccepted || !ws || !frame) {
        answered(seq);
        counters.lostBatch(seq);
        continue;
      }
      setEventBatchResent(frame);
      ws.send(frame);
    }
  }

  /** Batch `seq` was answered (or given up): it will not be sent again. */
  function answered(seq: number): void {
    const frame = unacked.get(seq);
    if (!frame) return;
    unacked.delete(seq);
    unackedBytes -= frame.byteLength;
  }

  function onMessage(msg: Exclude<PublishServerMessage, { type: "ready" }>): void {
    switch (msg.type) {
      case "ack": {
        answered(msg.seq);
        counters.acked(msg);
        if (msg.rateLimited > 0) notice("rate-limited", `the server's rate limit dropped ${msg.rateLimited} events`);
        if (msg.storeDropped) notice("store-dropped", `the server could not store ${msg.storeDropped} events (shown live only)`);
        if (msg.refused > 0) notice("refused", `the server refused ${msg.refused} events${msg.errors?.length ? `: ${msg.errors[0]}` : ""}`);
        pump();
        break;
      }
      case "error": {
        if (msg.seq !== null) {
          answered(msg.seq);
          counters.refusedBatch(msg.seq);
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

  function stop(): void {
    isStopped = true;
    counters.dropped += queue.clear() + encodedExtra;
    encodedExtra = 0;
    counters.lostInFlight();
    unacked.clear();
    unackedBytes = 0;
    connection.close();
    if (batchTimer) clearTimeout(batchTimer);
    if (pingTimer) clearInterval(pingTimer);
    batchTimer = pingTimer = null;
    wakeDrainWaiters();
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
    const ws = connection.readySocket;
    while (ws && queue.length > 0 && ws.bufferedAmount < maxBufferedBytes) {
      // An encoded batch goes alone; events queued here are batched together.
      const batch = queue.take(
        batchMaxEvents,
        Math.min(batchMaxBytes, maxMessageBytes),
        (first, item) => !isEncoded(first) && !isEncoded(item),
      );
      const first = batch[0]!;
      if (isEncoded(first)) {
        encodedExtra -= first.count - 1;
        sendEncodedBatch(ws, first);
      } else sendBatch(ws, batch as CapturedEvent[]);
    }
    if (queue.length === 0 && counters.inFlightBatches === 0) wakeDrainWaiters();
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
    counters.dispatched(n, events.length);
    keep(n, message);
    socket.send(message);
  }

  /** Keeps a sent batch until it is answered, to send again if the connection goes first (within the bound). */
  function keep(seq: number, frame: Uint8Array): void {
    if (!acceptsResent || unackedBytes + frame.byteLength > maxUnackedBytes) return;
    unacked.set(seq, frame);
    unackedBytes += frame.byteLength;
  }

  function sendEncodedBatch(socket: WebSocket, { frame, count }: EncodedEvents): void {
    if (!isBinary) {
      // An older server reads JSON only: these are dropped (counted), and whoever encodes is told to send events instead.
      counters.dropped += count;
      options.onEncodedRefused?.();
      return;
    }
    if (frame.byteLength > maxMessageBytes) {
      counters.dropped += count;
      return;
    }
    const n = ++seq;
    setEventBatchSeq(frame, n);
    counters.dispatched(n, count);
    keep(n, frame);
    socket.send(frame);
  }

  function scheduleBatch(): void {
    if (batchTimer || !connection.readySocket) return;
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
          const ws = connection.readySocket;
          if (ws && counters.inFlightBatches === 0 && queue.length === 0) ws.send(encoder.encode(`{"type":"ping","seq":${++seq}}`));
        }, 15_000);
        unref(pingTimer);
      }
      try {
        return await connection.join();
      } catch (err) {
        // A refused token or link will not get better; a server that is away is retried by the connection.
        if (isRefusal(err)) stop();
        throw err;
      }
    },

    send(event) {
      if (isStopped || isClosing) {
        counters.dropped++;
        return;
      }
      if (!queue.offer(event)) return;
      if (queue.length >= batchMaxEvents) pump();
      else scheduleBatch();
    },

    sendEncoded(events) {
      if (isStopped || isClosing) {
        counters.dropped += events.count;
        return;
      }
      // The queue counts one refused item; the batch held `count` events.
      if (!queue.offer(events)) {
        counters.dropped += events.count - 1;
        return;
      }
      encodedExtra += events.count - 1;
      pump();
    },

    flush: pump,

    async close(timeoutMs = 2000) {
      if (isStopped) return this.stats();
      isClosing = true;
      pump();
      const deadline = Date.now() + timeoutMs;
      while (!isStopped && (queue.length > 0 || counters.inFlightBatches > 0) && connection.hasSocket && Date.now() < deadline) {
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
      sent: counters.sent,
      dropped: counters.dropped + queue.dropped,
      refused: counters.refused,
      rateLimited: counters.rateLimited,
      storeDropped: counters.storeDropped,
      reconnects: connection.reconnects,
      queued: queue.length + encodedExtra,
      inFlight: counters.inFlightEvents(),
      isConnected: connection.readySocket !== null,
    }),
  };
}

/** The JSON message of a server that does not read binary batches: bodies as base64, as TracedEvent has them. */
function jsonBatch(seq: number, events: CapturedEvent[]): Uint8Array {
  const parts = events.map((e) => JSON.stringify(toTracedEvent(e)));
  return encoder.encode(`{"type":"events","seq":${seq},"events":[${parts.join(",")}]}`);
}

function unref(timer: unknown): void {
  (timer as { unref?: () => void }).unref?.();
}
