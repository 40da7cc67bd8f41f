import type { CapturedEvent } from "~/lib/protocol/event.ts";
import { BatchQueue } from "./batch-queue.ts";
import type { EncodedEvents } from "./batch-sender.ts";
import { estimateBytes } from "./estimate-bytes.ts";

type Queued = CapturedEvent | EncodedEvents;
const isEncoded = (item: Queued): item is EncodedEvents => "frame" in item && "count" in item;

/**
 * What waits to be sent: events captured here and batches another thread encoded, in one bounded queue (by count
 * and estimated bytes), counted in events. An encoded batch is one item of `count` events and goes out alone;
 * events are taken out in batches that fit a message.
 */
export class Outbox {
  private readonly queue: BatchQueue<Queued>;
  /** Events queued, and refused, beyond one per item (an encoded batch is one item of `count` events). */
  private queuedExtra = 0;
  private refusedExtra = 0;

  constructor(maxItems: number, maxBytes: number) {
    this.queue = new BatchQueue<Queued>(maxItems, maxBytes, (item) => (isEncoded(item) ? item.frame.byteLength : estimateBytes(item)));
  }

  /** Items waiting (an encoded batch is one). */
  get items(): number {
    return this.queue.length;
  }

  /** Events waiting. */
  get events(): number {
    return this.queue.length + this.queuedExtra;
  }

  /** Events refused because the queue was full. */
  get dropped(): number {
    return this.queue.dropped + this.refusedExtra;
  }

  /** Queues one event; false (counted in `dropped`) when it does not fit. */
  offer(event: CapturedEvent): boolean {
    return this.queue.offer(event);
  }

  /** Queues an encoded batch whole; false (its events counted in `dropped`) when it does not fit. */
  offerEncoded(encoded: EncodedEvents): boolean {
    if (!this.queue.offer(encoded)) {
      this.refusedExtra += encoded.count - 1;
      return false;
    }
    this.queuedExtra += encoded.count - 1;
    return true;
  }

  /** The next message's worth: an encoded batch alone, or events up to `maxEvents` and `maxBytes` (at least one). */
  take(maxEvents: number, maxBytes: number): CapturedEvent[] | EncodedEvents {
    const batch = this.queue.take(maxEvents, maxBytes, (first, item) => !isEncoded(first) && !isEncoded(item));
    const first = batch[0]!;
    if (!isEncoded(first)) return batch as CapturedEvent[];
    this.queuedExtra -= first.count - 1;
    return first;
  }

  /** Empties the queue; returns how many events it held. */
  clear(): number {
    const events = this.queue.clear() + this.queuedExtra;
    this.queuedExtra = 0;
    return events;
  }
}
