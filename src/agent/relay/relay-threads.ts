import { availableParallelism } from "node:os";
import { dirname } from "node:path";
import { pathToFileURL } from "node:url";
import { Worker } from "node:worker_threads";
import type { CapturedEvent } from "~/lib/protocol/event.ts";
import type { PendingRequest } from "~/lib/protocol/pending.ts";
import type { EncodedEvents } from "../publish.ts";
import { newSharedParentsBuffer, type SharedParentsBuffer } from "../tracer/shared-parents.ts";
import type { TracerOptions } from "../tracer.ts";
import type { InboundTarget } from "./inbound-connection.ts";
import { InboundTable, type InboundTableBuffer, newInboundTableBuffer } from "./inbound-table.ts";
import type { SockAddr } from "./sockaddr.ts";

/** The most relay threads: past four, the program and the kernel's own work on the same host decide the ceiling. */
export const MAX_RELAY_THREADS = 4;
/** Listening sockets the relay threads can be told about, by key (a takeover's number). */
const KEYS = 4096;

/** Cores minus one (one is left to the program), at least one, at most MAX_RELAY_THREADS. */
export function defaultRelayThreads(cores = availableParallelism()): number {
  return Math.max(1, Math.min(MAX_RELAY_THREADS, cores - 1));
}

export type RelayTracerConfig = Pick<TracerOptions, "host" | "service" | "redact" | "payloadLimit" | "webSocketMessageRate">;

/**
 * What a thread does with its events: nothing (nobody reads them), objects for the main thread (--log, --events-file),
 * or publish frames ready to send (only publishing: the main thread then neither builds nor encodes them).
 */
export type RelayDelivery = "none" | "objects" | "frames";

export type RelayThreadInit = {
  index: number;
  tracer: RelayTracerConfig;
  delivery: RelayDelivery;
  /** Requests waiting for their answer are posted (someone publishes them). */
  hasPending: boolean;
  parents: SharedParentsBuffer;
  table: InboundTableBuffer;
  /** Per key: blocking accept() calls parked on the main thread (a thread then says when a connection is up). */
  parked: SharedArrayBuffer;
  /** Per thread: how many stop messages it has carried out. */
  counters: SharedArrayBuffer;
  /** The run's connection id counter. */
  connectionIds: SharedArrayBuffer;
  /** Per thread, 8 words: open connections, connections served, connections not yet shown, releaseProcess calls done. */
  stats: SharedArrayBuffer;
};

export type ToThread =
  | { kind: "listen"; key: number; fd: number; target: InboundTarget }
  | { kind: "stop"; key: number }
  | { kind: "release"; port: number; pid: number }
  | { kind: "releaseProcess"; pid: number }
  | { kind: "drain"; id: number }
  | { kind: "delivery"; delivery: RelayDelivery };

export type ToMain =
  | { kind: "events"; events: CapturedEvent[] }
  | { kind: "frame"; frame: Uint8Array; count: number }
  | { kind: "pending"; requests: PendingRequest[] }
  | { kind: "connected"; key: number }
  | { kind: "refused"; key: number }
  | { kind: "drained"; id: number; droppedEvents: number; tapErrors: number; webSocketDropped: number };

/** The worker's module; in the compiled binary an extra entrypoint stored under the same relative path as in src/. */
function relayWorkerUrl(): URL {
  if (Bun.main.startsWith("/$bunfs/")) return new URL("./agent/relay/relay-worker.ts", pathToFileURL(`${dirname(Bun.main)}/`));
  return new URL("./relay-worker.ts", import.meta.url);
}

/**
 * The relay threads of `tapscope run --relay-threads N` (N > 1): N Workers that each accept a share of the program's
 * inbound connections on a socket of their own and relay and parse them there, so one traced program is not capped
 * at one core. The main thread keeps the seccomp supervisor, outbound connections and publishing; it learns of the
 * threads' connections through shared memory (InboundTable, the shared parent tracker) and gets their events as
 * messages. Everything within a connection stays on one thread, so the order of its events is kept.
 */
export class RelayThreads {
  readonly parents: SharedParentsBuffer = newSharedParentsBuffer();
  private readonly tableBuffer = newInboundTableBuffer();
  private readonly table = new InboundTable(this.tableBuffer);
  private readonly parked = new Int32Array(new SharedArrayBuffer(KEYS * 4));
  private readonly counters: Int32Array;
  private readonly connectionIds = new Int32Array(new SharedArrayBuffer(4));
  private readonly stats: Int32Array;
  private readonly workers: Worker[];
  private readonly drains = new Map<number, (m: Extract<ToMain, { kind: "drained" }>) => void>();
  private lastDrain = 0;
  /** Set by the supervisor: a connection of `key` is up (serve parked accepts), or nothing listens behind `key`. */
  handlers: { connected(key: number): void; refused(key: number): void } = { connected() {}, refused() {} };

  constructor(
    readonly count: number,
    tracer: RelayTracerConfig,
    deliver: {
      delivery: RelayDelivery;
      onEvent(event: CapturedEvent): void;
      onEncoded(events: EncodedEvents): void;
      /** Requests waiting for their answer (the tracer's onPending); absent: the threads do not look for them. */
      onPending?(requests: PendingRequest[]): void;
    },
    onError: (err: unknown) => void,
  ) {
    this.counters = new Int32Array(new SharedArrayBuffer(count * 4));
    this.stats = new Int32Array(new SharedArrayBuffer(count * 8 * 4));
    this.workers = Array.from({ length: count }, (_, index) => {
      const init: RelayThreadInit = {
        index,
        tracer,
        delivery: deliver.delivery,
        hasPending: deliver.onPending !== undefined,
        parents: this.parents,
        table: this.tableBuffer,
        parked: this.parked.buffer as SharedArrayBuffer,
        counters: this.counters.buffer as SharedArrayBuffer,
        connectionIds: this.connectionIds.buffer as SharedArrayBuffer,
        stats: this.stats.buffer as SharedArrayBuffer,
      };
      const worker = new Worker(relayWorkerUrl(), { workerData: init });
      worker.unref();
      worker.on("message", (m: ToMain) => {
        switch (m.kind) {
          case "events":
            for (const event of m.events) deliver.onEvent(event);
            return;
          case "frame":
            deliver.onEncoded({ frame: m.frame, count: m.count });
            return;
          case "pending":
            deliver.onPending?.(m.requests);
            return;
          case "connected":
            this.handlers.connected(m.key);
            return;
          case "refused":
            this.handlers.refused(m.key);
            return;
          case "drained":
            this.drains.get(m.id)?.(m);
            return;
        }
      });
      worker.on("error", onError);
      return worker;
    });
  }

  /** From now on the threads deliver their events this way (the server turned out to read JSON batches only). */
  setDelivery(delivery: RelayDelivery): void {
    for (let i = 0; i < this.count; i++) this.send(i, { kind: "delivery", delivery });
  }

  /** The main thread's connection ids come from the same counter, so ids stay unique within the run. */
  nextConnectionId(): number {
    return Atomics.add(this.connectionIds, 0, 1) + 1;
  }

  /** Thread i accepts on fds[i] (and closes it when told to stop). */
  listen(key: number, fds: number[], target: InboundTarget): void {
    for (const [i, fd] of fds.entries()) this.send(i, { kind: "listen", key, fd, target });
  }

  /** Every thread stops accepting on `key` and closes its socket before this returns (at most 500 ms). */
  stop(key: number): void {
    const before = this.workers.map((_, i) => Atomics.load(this.counters, i));
    for (let i = 0; i < this.count; i++) this.send(i, { kind: "stop", key });
    const deadline = Date.now() + 500;
    for (let i = 0; i < this.count; i++) {
      while (Atomics.load(this.counters, i) === before[i] && Date.now() < deadline) {
        Atomics.wait(this.counters, i, before[i]!, Math.max(1, deadline - Date.now()));
      }
    }
  }

  /** The connection a relay thread made from local port `port` to the program, if one did. */
  lookup(port: number): { thread: number; peer: SockAddr; local: SockAddr } | null {
    return this.table.get(port);
  }

  /** The program accepted the connection from `port`: its events name process `pid`. */
  release(port: number, thread: number, pid: number): void {
    this.send(thread, { kind: "release", port, pid });
  }

  /**
   * Process `pid` is connecting out: the requests it received on connections not yet shown to the tracer (its accept
   * ran natively) are in flight now. Each thread holding such connections shows them before this returns (at most
   * 50 ms), so the call can name its parent request, as on the main thread.
   */
  releaseProcess(pid: number): void {
    const asked: Array<[number, number]> = [];
    for (let i = 0; i < this.count; i++) {
      if (Atomics.load(this.stats, i * 8 + 2) === 0) continue;
      asked.push([i, Atomics.load(this.stats, i * 8 + 3)]);
      this.send(i, { kind: "releaseProcess", pid });
    }
    const deadline = Date.now() + 50;
    for (const [i, before] of asked) {
      while (Atomics.load(this.stats, i * 8 + 3) === before && Date.now() < deadline) {
        Atomics.wait(this.stats, i * 8 + 3, before, Math.max(1, deadline - Date.now()));
      }
    }
  }

  setParked(key: number, count: number): void {
    Atomics.store(this.parked, key % KEYS, count);
  }

  openConnections(): number {
    let open = 0;
    for (let i = 0; i < this.count; i++) open += Atomics.load(this.stats, i * 8);
    return open;
  }

  /** Inbound connections each thread has served so far. */
  served(): number[] {
    return this.workers.map((_, i) => Atomics.load(this.stats, i * 8 + 1));
  }

  /** Every thread turns what it has parsed into events and posts them; resolves once all have (or after timeoutMs). */
  async drain(timeoutMs: number): Promise<{ droppedEvents: number; tapErrors: number; webSocketDropped: number }> {
    const replies = await Promise.all(
      this.workers.map(
        (_, i) =>
          new Promise<{ droppedEvents: number; tapErrors: number; webSocketDropped: number }>((resolve) => {
            const id = ++this.lastDrain;
            const timer = setTimeout(() => {
              this.drains.delete(id);
              resolve({ droppedEvents: 0, tapErrors: 0, webSocketDropped: 0 });
            }, timeoutMs);
            this.drains.set(id, (m) => {
              clearTimeout(timer);
              this.drains.delete(id);
              resolve(m);
            });
            this.send(i, { kind: "drain", id });
          }),
      ),
    );
    return {
      droppedEvents: replies.reduce((n, r) => n + r.droppedEvents, 0),
      tapErrors: replies.reduce((n, r) => n + r.tapErrors, 0),
      webSocketDropped: replies.reduce((n, r) => n + r.webSocketDropped, 0),
    };
  }

  async close(): Promise<void> {
    await Promise.all(this.workers.map((w) => w.terminate().catch(() => {})));
  }

  private send(thread: number, message: ToThread): void {
    this.workers[thread]?.postMessage(message);
  }
}
