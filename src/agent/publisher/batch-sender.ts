import { type CapturedEvent, toTracedEvent } from "~/lib/protocol/event.ts";
import { EVENT_BATCH_FORMAT, encodeEventBatch, setEventBatchSeq } from "~/lib/protocol/event-batch.ts";
import type { PendingRequest } from "~/lib/protocol/pending.ts";
import type { ReadyMessage } from "./connection.ts";
import type { PublisherCounters } from "./counters.ts";
import type { UnackedBatches } from "./unacked-batches.ts";

/** Events another thread already encoded as one binary batch (encodeEventBatch with SEQ_SET_LATER). */
export type EncodedEvents = { frame: Uint8Array; count: number };

const encoder = new TextEncoder();

/**
 * Numbers, encodes and writes the publisher's messages on a ready socket, as the server's "ready" said it reads them:
 * binary event batches (bodies as bytes) or, to an older server, JSON. A batch over the server's message limit is
 * split, a single event over it dropped; each batch is counted in flight and, for a server that takes resent batches,
 * kept until answered.
 */
export class BatchSender {
  private seq = 0;
  private maxMessageBytes = 4 * 1024 * 1024;
  private isBinary = false;
  /** The server drops what it already stored of a resent batch: batches are kept to be sent again. */
  acceptsResent = false;
  /** The server shows requests still waiting for their answer (a `pending` message). */
  takesPending = false;

  constructor(
    private readonly counters: PublisherCounters,
    private readonly unacked: UnackedBatches,
    /** The server reads JSON only: an encoded batch was dropped, and whoever encodes should send events instead. */
    private readonly onEncodedRefused?: () => void,
  ) {}

  /** What the server's "ready" on a new socket says it reads. */
  ready(ready: ReadyMessage): void {
    this.maxMessageBytes = ready.maxMessageBytes;
    this.isBinary = ready.formats?.includes(EVENT_BATCH_FORMAT) === true;
    this.acceptsResent = this.isBinary && ready.acceptsResent === true;
    this.takesPending = ready.pending === true;
  }

  /** The largest message the server takes. */
  get messageLimit(): number {
    return this.maxMessageBytes;
  }

  send(socket: WebSocket, events: CapturedEvent[]): void {
    const n = ++this.seq;
    const message = this.isBinary ? encodeEventBatch(n, events) : jsonBatch(n, events);
    if (message.byteLength > this.maxMessageBytes) {
      if (events.length === 1) {
        this.counters.dropped++;
        return;
      }
      const half = events.length >> 1;
      this.send(socket, events.slice(0, half));
      this.send(socket, events.slice(half));
      return;
    }
    this.dispatch(socket, n, message, events.length);
  }

  sendEncoded(socket: WebSocket, { frame, count }: EncodedEvents): void {
    if (!this.isBinary) {
      this.counters.dropped += count;
      this.onEncodedRefused?.();
      return;
    }
    if (frame.byteLength > this.maxMessageBytes) {
      this.counters.dropped += count;
      return;
    }
    const n = ++this.seq;
    setEventBatchSeq(frame, n);
    this.dispatch(socket, n, frame, count);
  }

  /** Requests waiting for their answer: sent as they are, never kept or counted (the event that ends each is). */
  pending(socket: WebSocket, requests: PendingRequest[]): void {
    socket.send(encoder.encode(JSON.stringify({ type: "pending", seq: ++this.seq, requests })));
  }

  ping(socket: WebSocket): void {
    socket.send(encoder.encode(`{"type":"ping","seq":${++this.seq}}`));
  }

  private dispatch(socket: WebSocket, seq: number, frame: Uint8Array, count: number): void {
    this.counters.dispatched(seq, count);
    if (this.acceptsResent) this.unacked.keep(seq, frame);
    socket.send(frame);
  }
}

/** The JSON message of a server that does not read binary batches: bodies as base64, as TracedEvent has them. */
function jsonBatch(seq: number, events: CapturedEvent[]): Uint8Array {
  const parts = events.map((e) => JSON.stringify(toTracedEvent(e)));
  return encoder.encode(`{"type":"events","seq":${seq},"events":[${parts.join(",")}]}`);
}
