import type { CapturedEvent } from "~/lib/protocol/event.ts";
import type { PendingRequest } from "~/lib/protocol/pending.ts";
import type { PublishServerMessage } from "~/lib/protocol/publish.ts";
import type { PublisherHello, ReplayAnswer, ReplayOrder } from "~/lib/protocol/replay.ts";
import { Backoff } from "./publisher/backoff.ts";
import { BatchSender, type EncodedEvents } from "./publisher/batch-sender.ts";
import { PublisherConnection } from "./publisher/connection.ts";
import { PublisherCounters } from "./publisher/counters.ts";
import { isRefusal, type JoinInfo } from "./publisher/join.ts";
import { type NoticeKind, Notices } from "./publisher/notices.ts";
import { Outbox } from "./publisher/outbox.ts";
import { UnackedBatches } from "./publisher/unacked-batches.ts";

export type { EncodedEvents } from "./publisher/batch-sender.ts";
export { isRefusal, JoinError, type JoinInfo } from "./publisher/join.ts";
export type { NoticeKind } from "./publisher/notices.ts";

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
  /**
   * `tapscope run --allow-replay`: said in a hello after every "ready", and each replay order the server sends is
   * handed here; without it, orders are answered with a refusal (ADR 0041).
   */
  onReplay?: (order: ReplayOrder) => Promise<ReplayAnswer>;
  /** The server reads JSON batches only: batches encoded elsewhere (sendEncoded) cannot be sent, events must come instead. */
  onEncodedRefused?: () => void;
};

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
  /** Events batched and encoded elsewhere (a relay thread): sent as their own message, as soon as the socket allows. */
  sendEncoded(events: EncodedEvents): void;
  /**
   * Requests still waiting for their answer: sent now to a server that shows them, or not at all (away, backed up, or
   * an older server). They are never queued: the event that ends each request is what counts.
   */
  sendPending(requests: PendingRequest[]): void;
  flush(): void;
  /** Sends what is pending within timeoutMs, then closes; what is left is counted as dropped. */
  close(timeoutMs?: number): Promise<PublisherStats>;
  stats(): PublisherStats;
};

/**
 * In parts (src/agent/publisher/): the connection (join, socket, reconnect with backoff), the outbox (what waits, bounded), the
 * sender (numbering, encoding, splitting to the server's limit), the unacknowledged batches kept to be resent, the
 * counters every event ends in, and the notices told to the user. Here: how they are joined, and the outbox's pump.
 */
export function createPublisher(options: PublisherOptions): Publisher {
  const batchMaxEvents = options.batchMaxEvents ?? 500;
  const batchMaxBytes = options.batchMaxBytes ?? 1024 * 1024;
  const batchIntervalMs = options.batchIntervalMs ?? 50;
  const maxBufferedBytes = options.maxBufferedBytes ?? 8 * 1024 * 1024;

  const outbox = new Outbox(options.maxQueue ?? 10_000, options.maxQueuedBytes ?? 256 * 1024 * 1024);
  const counters = new PublisherCounters();
  const unacked = new UnackedBatches(counters, options.maxUnackedBytes ?? 64 * 1024 * 1024);
  const sender = new BatchSender(counters, unacked, options.onEncodedRefused);
  const notices = new Notices(options.onNotice);
  let isClosing = false;
  let isStopped = false;
  let batchTimer: ReturnType<typeof setTimeout> | null = null;
  let pingTimer: ReturnType<typeof setInterval> | null = null;
  let hasConnectedOnce = false;
  let drainWaiters: Array<() => void> = [];

  const connection = new PublisherConnection(options, new Backoff(options.reconnectMinMs ?? 250, options.reconnectMaxMs ?? 10_000), {
    onJoin: options.onJoin,
    canReconnect: () => !isStopped && !isClosing,
    onReady(ready, isReconnect) {
      sender.ready(ready);
      if (options.onReplay) {
        const hello: PublisherHello = { type: "hello", allowsReplay: true, service: options.service ?? "" };
        connection.readySocket?.send(JSON.stringify(hello));
      }
      if (isReconnect) notices.tell("reconnected", "reconnected to the Tapscope server");
      hasConnectedOnce = true;
      if (unacked.isResendDue) unacked.resend(connection.readySocket, sender.acceptsResent);
      pump();
    },
    onMessage,
    onGone() {
      unacked.connectionLost();
      wakeDrainWaiters();
      if (isStopped || isClosing) return;
      if (hasConnectedOnce)
        notices.tell(
          "disconnected",
          "lost the connection to the Tapscope server; reconnecting (events are dropped meanwhile when the queue is full)",
        );
    },
    onRefused(err) {
      notices.tell("join-failed", `the server refused this publisher: ${err.message}`);
      stop();
    },
  });

  function onMessage(msg: Exclude<PublishServerMessage, { type: "ready" }>): void {
    switch (msg.type) {
      case "ack": {
        unacked.answered(msg.seq);
        counters.acked(msg);
        if (msg.rateLimited > 0) notices.tell("rate-limited", `the server's rate limit dropped ${msg.rateLimited} events`);
        if (msg.storeDropped) notices.tell("store-dropped", `the server could not store ${msg.storeDropped} events (shown live only)`);
        if (msg.refused > 0)
          notices.tell("refused", `the server refused ${msg.refused} events${msg.errors?.length ? `: ${msg.errors[0]}` : ""}`);
        pump();
        break;
      }
      case "error": {
        if (msg.seq !== null) {
          unacked.answered(msg.seq);
          counters.refusedBatch(msg.seq);
        }
        notices.tell("refused", `the server refused a message: ${msg.message}`);
        pump();
        break;
      }
      case "expired":
        notices.tell("expired", "the shared link expired; events are no longer published");
        stop();
        break;
      case "noted":
        if (msg.refused > 0) notices.tell("refused", `the server refused ${msg.refused} pending requests`);
        break;
      case "pong":
        break;
      case "replay":
        void replay(msg);
        break;
    }
  }

  /** Answers on the socket that is ready when the replay is done (its order's socket, unless that one went). */
  async function replay(order: ReplayOrder): Promise<void> {
    const answer: ReplayAnswer = options.onReplay
      ? await options.onReplay(order).catch((err: unknown) => ({
          type: "replayed" as const,
          id: order.id,
          ok: false as const,
          error: err instanceof Error ? err.message : String(err),
        }))
      : { type: "replayed", id: order.id, ok: false, error: "this run does not allow replays (start it with --allow-replay)" };
    connection.readySocket?.send(JSON.stringify(answer));
  }

  function stop(): void {
    isStopped = true;
    counters.dropped += outbox.clear();
    counters.lostInFlight();
    unacked.clear();
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
    while (ws && outbox.items > 0 && ws.bufferedAmount < maxBufferedBytes) {
      const next = outbox.take(batchMaxEvents, Math.min(batchMaxBytes, sender.messageLimit));
      if (Array.isArray(next)) sender.send(ws, next);
      else sender.sendEncoded(ws, next);
    }
    if (outbox.items === 0 && counters.inFlightBatches === 0) wakeDrainWaiters();
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
          if (ws && counters.inFlightBatches === 0 && outbox.items === 0) sender.ping(ws);
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
      if (!outbox.offer(event)) return;
      if (outbox.items >= batchMaxEvents) pump();
      else scheduleBatch();
    },

    sendEncoded(events) {
      if (isStopped || isClosing) {
        counters.dropped += events.count;
        return;
      }
      if (outbox.offerEncoded(events)) pump();
    },

    sendPending(requests) {
      const ws = connection.readySocket;
      if (isStopped || isClosing || !ws || !sender.takesPending || ws.bufferedAmount >= maxBufferedBytes) return;
      sender.pending(ws, requests);
    },

    flush: pump,

    async close(timeoutMs = 2000) {
      if (isStopped) return this.stats();
      isClosing = true;
      pump();
      const deadline = Date.now() + timeoutMs;
      while (!isStopped && (outbox.items > 0 || counters.inFlightBatches > 0) && connection.hasSocket && Date.now() < deadline) {
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
      dropped: counters.dropped + outbox.dropped,
      refused: counters.refused,
      rateLimited: counters.rateLimited,
      storeDropped: counters.storeDropped,
      reconnects: connection.reconnects,
      queued: outbox.events,
      inFlight: counters.inFlightEvents(),
      isConnected: connection.readySocket !== null,
    }),
  };
}

function unref(timer: unknown): void {
  (timer as { unref?: () => void }).unref?.();
}
