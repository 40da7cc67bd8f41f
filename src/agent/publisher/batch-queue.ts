import { BoundedQueue } from "../bounded-queue.ts";

/**
 * The publisher's waiting events, bounded by count and by estimated bytes (a server that is away costs bounded
 * memory), taken out in batches that fit a message. Each item's size is computed once, when it is offered.
 */
export class BatchQueue<T> {
  private readonly queue: BoundedQueue<T>;

  constructor(
    maxItems: number,
    maxBytes: number,
    private readonly sizeOf: (item: T) => number,
  ) {
    this.queue = new BoundedQueue<T>(maxItems, maxBytes);
  }

  get length(): number {
    return this.queue.length;
  }

  get bytes(): number {
    return this.queue.bytes;
  }

  /** Items refused because the queue was full. */
  get dropped(): number {
    return this.queue.dropped;
  }

  /** Queues `item`; false (counted in `dropped`) when it does not fit. */
  offer(item: T): boolean {
    return this.queue.push(item, this.sizeOf(item));
  }

  /**
   * The oldest items, up to `maxItems` and `maxBytes` of estimated size; at least one while any wait. With `together`,
   * the batch also ends before the first item that does not go with the batch's first.
   */
  take(maxItems: number, maxBytes: number, together?: (first: T, item: T) => boolean): T[] {
    const batch: T[] = [];
    let bytes = 0;
    while (this.queue.length > 0 && batch.length < maxItems) {
      const size = this.queue.peekSize();
      if (bytes + size > maxBytes && batch.length > 0) break;
      if (together && batch.length > 0 && !together(batch[0]!, this.queue.peek()!)) break;
      batch.push(this.queue.shift()!);
      bytes += size;
    }
    return batch;
  }

  /** Empties the queue; returns how many items it held. */
  clear(): number {
    return this.queue.clear();
  }
}
