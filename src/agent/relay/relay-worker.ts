import { parentPort, workerData } from "node:worker_threads";
import type { TCPSocketListener } from "bun";
import type { CapturedEvent } from "~/lib/protocol/event.ts";
import { encodeEventBatch, SEQ_SET_LATER } from "~/lib/protocol/event-batch.ts";
import { estimateBytes } from "../publisher/estimate-bytes.ts";
import { SharedParentTracker } from "../tracer/shared-parents.ts";
import { createTracer } from "../tracer.ts";
import { type InboundTarget, relayInboundConnection } from "./inbound-connection.ts";
import { InboundTable } from "./inbound-table.ts";
import { legOptions } from "./leg-options.ts";
import { type LegData, type Pipe, pipeStats } from "./pipe.ts";
import type { RelayThreadInit, ToMain, ToThread } from "./relay-threads.ts";

/**
 * One relay thread of `tapscope run --relay-threads N`: it accepts its share of the program's inbound connections on a
 * listening socket of its own (SO_REUSEPORT spreads connections over the threads' sockets), relays and parses them
 * as the main thread would, and posts the finished events to the main thread, which publishes them.
 */
const init = workerData as RelayThreadInit;
let delivery = init.delivery;
const port = parentPort!;
const table = new InboundTable(init.table);
const parked = new Int32Array(init.parked);
const counters = new Int32Array(init.counters);
const connectionIds = new Int32Array(init.connectionIds);
const stats = new Int32Array(init.stats, init.index * 8 * 4, 8);
/** stats: open inbound connections, connections served, connections not yet shown to the tracer, releases done. */
/** As the publisher batches its own events (publish.ts defaults). */
const FRAME_MAX_EVENTS = 500;
const FRAME_MAX_BYTES = 1024 * 1024;
const FRAME_INTERVAL_MS = 50;
const REFUSED_RESET_DELAY_MS = 20;
const OPEN = 0;
const SERVED = 1;
const DEFERRED = 2;
const RELEASES = 3;

let pending: CapturedEvent[] = [];
let isScheduled = false;
/** Frames delivery: the events of the batch being gathered, and their estimated bytes. */
let gathered: CapturedEvent[] = [];
let gatheredBytes = 0;
let gatherTimer: ReturnType<typeof setTimeout> | null = null;

function compact(body: string | Uint8Array, transfer: ArrayBuffer[]): string | Uint8Array {
  if (typeof body === "string" || body.byteLength === 0) return body;
  // A view of a larger read would take that whole buffer along: send its own bytes, moved rather than copied again.
  const own = body.slice();
  transfer.push(own.buffer as ArrayBuffer);
  return own;
}

function post(): void {
  isScheduled = false;
  if (pending.length === 0) return;
  const transfer: ArrayBuffer[] = [];
  const events = pending.map((e) => ({
    ...e,
    http_req_body: compact(e.http_req_body, transfer),
    http_resp_body: compact(e.http_resp_body, transfer),
  }));
  pending = [];
  port.postMessage({ kind: "events", events } satisfies ToMain, transfer);
}

/** The gathered events as one publish frame, moved to the main thread (its publisher sets the frame's seq). */
function postFrame(): void {
  if (gatherTimer) clearTimeout(gatherTimer);
  gatherTimer = null;
  if (gathered.length === 0) return;
  let frame = encodeEventBatch(SEQ_SET_LATER, gathered);
  // A small frame may be a view of a shared pool: its own bytes are sent, not the pool.
  if (frame.byteOffset !== 0 || frame.byteLength !== frame.buffer.byteLength) frame = frame.slice();
  port.postMessage({ kind: "frame", frame, count: gathered.length } satisfies ToMain, [frame.buffer as ArrayBuffer]);
  gathered = [];
  gatheredBytes = 0;
}

/** Batches as the publisher would (by count, bytes or time), encoded here so the main thread only sends them. */
function gather(event: CapturedEvent): void {
  const bytes = estimateBytes(event);
  // A very large event goes in a frame of its own: a frame over the server's message limit is dropped whole.
  if (gathered.length > 0 && gatheredBytes + bytes > FRAME_MAX_BYTES) postFrame();
  gathered.push(event);
  gatheredBytes += bytes;
  if (gathered.length >= FRAME_MAX_EVENTS || gatheredBytes >= FRAME_MAX_BYTES) postFrame();
  else gatherTimer ??= setTimeout(postFrame, FRAME_INTERVAL_MS);
}

/** Requests in flight across threads; this thread's forwards are counted in it. */
const parents = new SharedParentTracker(init.parents, init.index);
const tracer = createTracer({
  ...init.tracer,
  parents,
  onPending: init.hasPending
    ? (requests) => {
        if (delivery !== "none") port.postMessage({ kind: "pending", requests } satisfies ToMain);
      }
    : undefined,
  onEvent(event) {
    if (delivery === "frames") {
      gather(event);
      return;
    }
    if (delivery === "none") return;
    pending.push(event);
    if (!isScheduled) {
      isScheduled = true;
      setImmediate(post);
    }
  },
});

const listeners = new Map<number, TCPSocketListener<LegData>>();
const byPort = new Map<number, { pipe: Pipe; generation: number }>();
/** Connections waiting for the program's accept to be named; their count is mirrored for the main thread. */
class MirroredSet extends Set<Pipe> {
  override add(pipe: Pipe): this {
    super.add(pipe);
    Atomics.store(stats, DEFERRED, this.size);
    return this;
  }
  override delete(pipe: Pipe): boolean {
    const had = super.delete(pipe);
    Atomics.store(stats, DEFERRED, this.size);
    return had;
  }
}
const deferred = new MirroredSet();

function listen(key: number, fd: number, target: InboundTarget): void {
  const server = Bun.listen<LegData>(
    legOptions(
      { fd },
      {
        open(client) {
          Atomics.add(stats, SERVED, 1);
          relayInboundConnection(target, client, {
            observer: tracer,
            nextConnectionId: () => Atomics.add(connectionIds, 0, 1) + 1,
            register(relayPort, peer, local, pipe) {
              byPort.set(relayPort, { pipe, generation: table.set(relayPort, init.index, peer, local) });
            },
            unregister(relayPort, pipe) {
              const entry = byPort.get(relayPort);
              if (entry?.pipe !== pipe) return;
              byPort.delete(relayPort);
              table.clear(relayPort, entry.generation);
            },
            deferred,
            forwarding: parents,
            onConnected() {
              if (Atomics.load(parked, key) > 0) port.postMessage({ kind: "connected", key } satisfies ToMain);
            },
            onRefused(reset) {
              port.postMessage({ kind: "refused", key } satisfies ToMain);
              // The client may be the program itself, connecting through the main thread's relay, which answers its
              // connect() once its own dial is up: a reset arriving first would fail that connect() with ECONNRESET,
              // which the single-threaded relay (resetting from the same thread) never does. So a moment later.
              setTimeout(reset, REFUSED_RESET_DELAY_MS);
            },
          });
        },
      },
    ),
  );
  listeners.set(key, server);
}

/** The main thread waits for open connections at exit: mirrored often enough for that. */
const mirrorOpen = () => Atomics.store(stats, OPEN, tracer.stats().openConnections);
setInterval(mirrorOpen, 20).unref();

port.on("message", (m: ToThread) => {
  switch (m.kind) {
    case "listen":
      try {
        listen(m.key, m.fd, m.target);
      } catch {
        port.postMessage({ kind: "refused", key: m.key } satisfies ToMain);
      }
      return;
    case "stop": {
      listeners.get(m.key)?.stop(true);
      listeners.delete(m.key);
      Atomics.add(counters, init.index, 1);
      Atomics.notify(counters, init.index);
      return;
    }
    case "delivery":
      postFrame();
      delivery = m.delivery;
      return;
    case "release":
      byPort.get(m.port)?.pipe.release(m.pid);
      return;
    case "releaseProcess":
      for (const pipe of [...deferred]) if (pipe.info.pid === m.pid) pipe.release(m.pid);
      Atomics.add(stats, RELEASES, 1);
      Atomics.notify(stats, RELEASES);
      return;
    case "drain":
      tracer.flush();
      post();
      postFrame();
      mirrorOpen();
      port.postMessage({
        kind: "drained",
        id: m.id,
        droppedEvents: tracer.stats().droppedEvents,
        tapErrors: pipeStats.tapErrors,
        webSocketDropped: tracer.stats().webSocketDropped,
      } satisfies ToMain);
      return;
  }
});
