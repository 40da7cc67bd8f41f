import type { ParentTracker } from "./parent-tracker.ts";

/** Inbound requests in flight at once, across all relay threads; beyond this, a request is not offered as a parent. */
const SLOTS = 4096;
/** An event id is a UUID: 36 ASCII characters. */
const ID_BYTES = 36;
/** Per slot in `words`: the slot's order (0 when free, -1 while being written) and its process id. */
const WORDS = 2;

export type SharedParentsBuffer = SharedArrayBuffer;

export function newSharedParentsBuffer(): SharedParentsBuffer {
  // The order counter, then the slots' words, then their ids.
  return new SharedArrayBuffer(4 + SLOTS * WORDS * 4 + SLOTS * ID_BYTES);
}

/**
 * The ParentTracker of a run whose inbound connections are relayed on several threads: an outbound call made on the
 * main thread still gets as its parent the newest inbound request of its process, whichever thread parsed that
 * request. Each thread writes the requests it starts into shared slots (an order number, the process id, the event
 * id) and clears them when they finish; `current` reads the newest slot of the process.
 */
export class SharedParentTracker<Request extends { eventId: string } = { eventId: string }>
  implements Pick<ParentTracker<Request>, "current" | "start" | "finish">
{
  private readonly order: Int32Array;
  private readonly words: Int32Array;
  private readonly ids: Uint8Array;
  private readonly mine = new Map<Request, number>();
  private next = 0;

  constructor(buffer: SharedParentsBuffer) {
    this.order = new Int32Array(buffer, 0, 1);
    this.words = new Int32Array(buffer, 4, SLOTS * WORDS);
    this.ids = new Uint8Array(buffer, 4 + SLOTS * WORDS * 4, SLOTS * ID_BYTES);
  }

  current(pid: number): string {
    let best = -1;
    let bestOrder = 0;
    for (let slot = 0; slot < SLOTS; slot++) {
      const order = Atomics.load(this.words, slot * WORDS);
      if (order > bestOrder && this.words[slot * WORDS + 1] === pid) {
        best = slot;
        bestOrder = order;
      }
    }
    if (best < 0) return "";
    const id = String.fromCharCode(...this.ids.subarray(best * ID_BYTES, (best + 1) * ID_BYTES));
    // Freed (or reused) while it was read: that request is no longer in flight.
    return Atomics.load(this.words, best * WORDS) === bestOrder ? id : "";
  }

  start(pid: number, request: Request): void {
    if (request.eventId.length !== ID_BYTES) return;
    for (let tries = 0; tries < SLOTS; tries++) {
      const slot = this.next;
      this.next = (this.next + 1) % SLOTS;
      if (Atomics.compareExchange(this.words, slot * WORDS, 0, -1) !== 0) continue;
      this.words[slot * WORDS + 1] = pid;
      for (let i = 0; i < ID_BYTES; i++) this.ids[slot * ID_BYTES + i] = request.eventId.charCodeAt(i);
      Atomics.store(this.words, slot * WORDS, Atomics.add(this.order, 0, 1) + 1);
      this.mine.set(request, slot);
      return;
    }
  }

  finish(_pid: number, request: Request): void {
    const slot = this.mine.get(request);
    if (slot === undefined) return;
    this.mine.delete(request);
    Atomics.store(this.words, slot * WORDS, 0);
  }

  /** Requests this thread has in flight (tests, leak checks). */
  get processes(): number {
    return this.mine.size;
  }
}
