import type { PublishServerMessage } from "~/lib/protocol/publish.ts";

type Ack = Extract<PublishServerMessage, { type: "ack" }>;

/**
 * What became of published events, and the batches sent but not yet answered. Every event ends in exactly one
 * of sent, refused, rate-limited or dropped; storeDropped counts events that were accepted (shown live) but not stored.
 */
export class PublisherCounters {
  sent = 0;
  dropped = 0;
  refused = 0;
  rateLimited = 0;
  storeDropped = 0;
  /** seq -> events in that batch, for batches without an answer yet. */
  private readonly inFlight = new Map<number, number>();

  /** A batch of `count` events went out as message `seq`. */
  dispatched(seq: number, count: number): void {
    this.inFlight.set(seq, count);
  }

  /** The server's answer to a batch; anything it did not account for was lost. */
  acked(ack: Ack): void {
    const count = this.inFlight.get(ack.seq) ?? 0;
    this.inFlight.delete(ack.seq);
    this.sent += ack.accepted;
    this.refused += ack.refused;
    this.rateLimited += ack.rateLimited;
    this.dropped += Math.max(0, count - ack.accepted - ack.refused - ack.rateLimited);
    if (ack.storeDropped) this.storeDropped += ack.storeDropped;
  }

  /** The server refused message `seq` as a whole. */
  refusedBatch(seq: number): void {
    this.refused += this.inFlight.get(seq) ?? 0;
    this.inFlight.delete(seq);
  }

  /** Every batch still unanswered is given up (counted dropped): the publisher stops, or cannot send them again. */
  lostInFlight(): void {
    this.dropped += this.inFlightEvents();
    this.inFlight.clear();
  }

  /** Batch `seq` is given up: it may or may not have arrived, and will not be sent again. */
  lostBatch(seq: number): void {
    this.dropped += this.inFlight.get(seq) ?? 0;
    this.inFlight.delete(seq);
  }

  /** The batches sent and not yet answered, oldest first. */
  unansweredSeqs(): number[] {
    return [...this.inFlight.keys()].sort((a, b) => a - b);
  }

  /** Batches sent and not yet answered. */
  get inFlightBatches(): number {
    return this.inFlight.size;
  }

  inFlightEvents(): number {
    let n = 0;
    for (const c of this.inFlight.values()) n += c;
    return n;
  }
}
