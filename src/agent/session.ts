import { appendFileSync, writeSync } from "node:fs";
import { isatty } from "node:tty";
import { errorMessage } from "~/lib/errors.ts";
import { type CapturedEvent, toTracedEvent } from "~/lib/protocol/event.ts";
import type { PendingRequest } from "~/lib/protocol/pending.ts";
import type { ReplayAnswer, ReplayOrder } from "~/lib/protocol/replay.ts";
import type { AgentConfig, HostEnvironment } from "~/lib/server/env.ts";
import { hostMetadata } from "./event.ts";
import { formatLogLine, formatPendingLine } from "./log-line.ts";
import { createPublisher, isRefusal, type JoinInfo } from "./publish.ts";
import type { RedactMode } from "./redact.ts";
import { nowMicros } from "./relay/observer.ts";
import { pipeStats } from "./relay/pipe.ts";
import { RelayThreads } from "./relay/relay-threads.ts";
import { sendReplay } from "./replay.ts";
import { say } from "./say.ts";
import { SharedParentTracker } from "./tracer/shared-parents.ts";
import { createTracer, DEFAULT_WS_MESSAGE_RATE, type Tracer, type TracerStats } from "./tracer.ts";

/**
 * What `tapscope run` and `tapscope proxy` share after the relay: the tracer (bytes -> events), the
 * `--log` lines, the optional JSON-lines file, and the publisher (events -> the server), plus the short
 * lines on stderr that say where the requests can be seen and what was dropped.
 */
export type SessionOptions = {
  agent: AgentConfig;
  host: HostEnvironment;
  service: string;
  redact: RedactMode;
  payloadLimit: number;
  /** WebSocket messages recorded per second per connection; 0: all. */
  webSocketMessageRate?: number;
  log: boolean;
  /** Also append every event as one JSON line to this file. */
  eventsFile?: string;
  /** Publish to the server (off only in tests and benchmarks that have none). */
  publish: boolean;
  /** Threads that relay and parse inbound connections; 1 (or absent): the main thread does. */
  relayThreads?: number;
  /** `--allow-replay`: an admin's Resend may send requests through this run (ADR 0041). */
  allowReplay?: boolean;
};

export type Session = {
  tracer: Tracer;
  /** The relay threads when there are several (they post their events here). */
  threads: RelayThreads | null;
  /** Connections still being parsed, on every thread. */
  openConnections(): number;
  /** Where the requests can be seen, in a few words (the live link, the server and namespace), or null when nowhere. */
  destination(): string | null;
  /** Resolves once the first join has answered (the link is printed) or failed, or after `waitMs` at most. */
  joined(waitMs: number): Promise<void>;
  /** Flushes the tracer and the publisher (bounded wait) and reports what was dropped. */
  finish(): Promise<void>;
};

/** The run's database calls per protocol, in a line: "database calls: 12 postgresql, 40 redis"; null when none. */
export function databaseCalls(stats: TracerStats): string | null {
  const counts: Array<[string, number]> = [
    ["postgresql", stats.postgresqlCalls],
    ["mysql", stats.mysqlCalls],
    ["redis", stats.redisCalls],
  ];
  const seen = counts.filter(([, n]) => n > 0).map(([name, n]) => `${n} ${name}`);
  if (seen.length === 0 && stats.dbUnrecorded === 0) return null;
  const unrecorded = stats.dbUnrecorded > 0 ? ` (${stats.dbUnrecorded} pub/sub, MONITOR or NOTIFY messages counted, not recorded)` : "";
  return `database calls: ${seen.join(", ") || "none"}${unrecorded}`;
}

function linkBox(url: string): string {
  const text = `See your requests live: ${url}`;
  const bar = "─".repeat(text.length + 2);
  return `┌${bar}┐\n│ ${text} │\n└${bar}┘\n`;
}

function announce(info: JoinInfo, endpoint: string): void {
  if (info.linkUrl) {
    try {
      writeSync(2, linkBox(info.linkUrl));
    } catch {}
  } else if (info.namespaceId) say(`sending requests to ${endpoint} (namespace ${info.namespaceId})`);
}

export function createSession(options: SessionOptions): Session {
  const endpoint = options.agent.endpoint;
  let hasAnnounced = false;
  let isWaiting = false;
  let joined: JoinInfo | null = null;
  const publisher = options.publish
    ? createPublisher({
        endpoint,
        token: options.agent.token,
        linkId: options.agent.linkId,
        service: options.service,
        onNotice: (_kind, message) => say(message),
        onReplay: options.allowReplay ? (order) => replay(order) : undefined,
        // The first join that works, now or after the server came back: say where the requests go.
        // A server that reads JSON batches only: the relay threads send events instead of frames from then on.
        onEncodedRefused: () => threads?.setDelivery("objects"),
        onJoin: (info) => {
          joined = info;
          if (hasAnnounced) return;
          hasAnnounced = true;
          if (isWaiting) say(`connected to ${endpoint}; publishing requests now`);
          announce(info, endpoint);
        },
      })
    : null;
  // isatty, not process.stderr: that stream keeps a dup of fd 2, which a background supervisor must be able to let go.
  const color = isatty(2);
  const onEvent = (event: CapturedEvent) => {
    if (replayClients.size > 0 && !event.http_is_outgoing) {
      const replayed = replayClients.get(event.http_client_addr);
      if (replayed) {
        event.replay_of = replayed.replayOf;
        replayed.seen(event.event_id);
      }
    }
    publisher?.send(event);
    if (options.log) {
      try {
        writeSync(2, `${formatLogLine(event, { color })}\n`);
      } catch {}
    }
    if (options.eventsFile) appendFileSync(options.eventsFile, `${JSON.stringify(toTracedEvent(event))}\n`);
  };
  // Requests that have waited a second: the tracer sends each once (bounded per connection and per run).
  const onPending =
    publisher || options.log
      ? (requests: PendingRequest[]) => {
          publisher?.sendPending(requests);
          if (!options.log) return;
          const now = nowMicros();
          const lines = requests.map((p) => `${formatPendingLine(p, { color, waitedMicros: now - p.time })}\n`).join("");
          try {
            writeSync(2, lines);
          } catch {}
        }
      : undefined;
  // An inbound replay goes through the relay like any client's request: the relay's own event of it is the one
  // published, marked by the replay connection's client address; an outbound one is recorded here.
  const replayClients = new Map<string, { replayOf: string; seen: (eventId: string) => void }>();
  const baseReplayContext = {
    host: hostMetadata(options.host),
    service: options.service,
    redact: options.redact,
    payloadLimit: options.payloadLimit,
  };
  async function replay(order: ReplayOrder): Promise<ReplayAnswer> {
    const isInbound = order.target.direction === "inbound";
    let client = "";
    let relayed: Promise<string> | null = null;
    const { answer, event } = await sendReplay(order, {
      ...baseReplayContext,
      onConnected: isInbound
        ? (address) => {
            client = address;
            relayed = new Promise<string>((resolve) => replayClients.set(address, { replayOf: order.replayOf, seen: resolve }));
          }
        : undefined,
    });
    if (!isInbound) {
      if (event) onEvent(event);
    } else if (answer.ok && relayed) {
      // The relay records the exchange once it has ended: wait for it a little, to answer with its id.
      let timer: Timer | undefined;
      const eventId = await Promise.race([relayed, new Promise<string>((resolve) => (timer = setTimeout(() => resolve(""), 3000)))]);
      clearTimeout(timer);
      answer.eventId = eventId;
    }
    replayClients.delete(client);
    if (!answer.ok) say(`a replay of ${order.method} ${order.path.slice(0, 200)} failed: ${answer.error}`);
    return answer;
  }
  const tracerConfig = {
    host: hostMetadata(options.host),
    service: options.service,
    redact: options.redact,
    payloadLimit: options.payloadLimit,
    webSocketMessageRate: options.webSocketMessageRate,
  };
  const threads =
    (options.relayThreads ?? 1) > 1
      ? new RelayThreads(
          options.relayThreads!,
          tracerConfig,
          {
            // Only publishing: the threads encode the publish frames themselves.
            // Replays are marked on the main thread, on the events themselves.
            delivery: options.log || options.eventsFile || options.allowReplay ? "objects" : publisher ? "frames" : "none",
            onEvent,
            onEncoded: (events) => publisher?.sendEncoded(events),
            onPending,
          },
          (err) => say(`a relay thread failed: ${errorMessage(err)}`),
        )
      : null;
  const tracer = createTracer({
    ...tracerConfig,
    parents: threads ? new SharedParentTracker(threads.parents) : undefined,
    onEvent,
    onPending,
  });
  const firstJoin = publisher?.join().catch((err: unknown) => {
    const reason = errorMessage(err);
    if (isRefusal(err)) {
      say(`${endpoint} refused this publisher (${reason}); requests are not published`);
      return;
    }
    isWaiting = true;
    say(
      `could not reach ${endpoint} (${reason}); retrying in the background: requests are published once it answers (meanwhile they wait in a bounded queue)`,
    );
  });

  return {
    tracer,
    threads,
    openConnections: () => tracer.stats().openConnections + (threads?.openConnections() ?? 0),
    async joined(waitMs) {
      if (!firstJoin) return;
      let timer: Timer | undefined;
      await Promise.race([firstJoin, new Promise<void>((resolve) => (timer = setTimeout(resolve, waitMs)))]);
      clearTimeout(timer);
    },
    destination() {
      const file = options.eventsFile ? `the events file ${options.eventsFile}` : null;
      if (!publisher) return file;
      const info = joined as JoinInfo | null;
      if (info?.linkUrl) return info.linkUrl;
      if (info?.namespaceId) return `${endpoint} (namespace ${info.namespaceId})`;
      return `${endpoint} (once it answers)`;
    },
    async finish() {
      const fromThreads = threads ? await threads.drain(1000) : { droppedEvents: 0, tapErrors: 0, webSocketDropped: 0 };
      tracer.flush();
      const stats = tracer.stats();
      const published = publisher ? await publisher.close(2000) : null;
      const dropped = stats.droppedEvents + fromThreads.droppedEvents + (published?.dropped ?? 0);
      const parts: string[] = [];
      if (dropped > 0) parts.push(`${dropped} events dropped`);
      const webSocketDropped = stats.webSocketDropped + fromThreads.webSocketDropped;
      if (webSocketDropped > 0) {
        const rate = options.webSocketMessageRate ?? DEFAULT_WS_MESSAGE_RATE;
        parts.push(
          `${webSocketDropped} WebSocket messages counted but not recorded (over ${rate} a second on a connection: --ws-message-rate)`,
        );
      }
      if (published && published.refused + published.rateLimited > 0) {
        parts.push(`${published.refused + published.rateLimited} refused or rate-limited by the server`);
      }
      const tapErrors = pipeStats.tapErrors + fromThreads.tapErrors;
      if (tapErrors > 0) parts.push(`${tapErrors} connections passed through untraced after a parser fault`);
      if (parts.length > 0) say(parts.join(", "));
      const calls = databaseCalls(stats);
      if (calls) say(calls);
      if (threads) say(`${threads.count} relay threads served ${threads.served().join(", ")} inbound connections`);
      await threads?.close();
    },
  };
}
