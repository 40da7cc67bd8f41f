import type { ParentTracker } from "./parent-tracker.ts";

/** Inbound requests in flight at once, across all relay threads; beyond this, a request is not offered as a parent. */
const SLOTS = 4096;
/** An event id is a UUID: 36 ASCII characters. */
const ID_BYTES = 36;
/** Per slot in `words`: the slot's order (0 when free, -1 while being written) and its process id. */
const WORDS = 2;

export type SharedParentsBuffer = SharedArrayBuffer;

export function newSharedParentsBuffer(): SharedParentsBuffer {
  // The order counter and the slots in use's high-water mark, then the slots' words, then their ids.
  return new SharedArrayBuffer(8 + SLOTS * WORDS * 4 + SLOTS * ID_BYTES);
}

/**
 * The ParentTracker of a run whose inbound connections are relayed on several threads: an outbound call made on the
 * main thread still gets as its parent the newest inbound request of its process, whichever thread parsed that
 * request. Each thread writes the requests it starts into shared slots (an order number, the process id, the event
 * id) and clears them when they finish; `current` reads the newest slot of the process. Slots are taken lowest first,
 * so a read looks only as far as the most requests ever in flight at once (a database call asks on every statement).
 */
export class SharedParentTracker<Request extends { eventId: string } = { eventId: string }>
  implements Pick<ParentTracker<Request>, "current" | "inflight" | "parent" | "start" | "finish">
{
  /** [0]: the order counter; [1]: one past the highest slot ever taken. */
  private readonly header: Int32Array;
  private readonly words: Int32Array;
  private readonly ids: Uint8Array;
  private readonly mine = new Map<Request, number>();

  constructor(buffer: SharedParentsBuffer) {
    this.header = new Int32Array(buffer, 0, 2);
    this.words = new Int32Array(buffer, 8, SLOTS * WORDS);
    this.ids = new Uint8Array(buffer, 8 + SLOTS * WORDS * 4, SLOTS * ID_BYTES);
  }

  current(pid: number): string {
    return this.parent(pid).id;
  }

  inflight(pid: number): number {
    return this.parent(pid).candidates;
  }

  /** The newest request of `pid` in flight and how many it has, in one look at the slots. */
  parent(pid: number): { id: string; candidates: number } {
    let best = -1;
    let bestOrder = 0;
    let candidates = 0;
    const limit = Atomics.load(this.header, 1);
    for (let slot = 0; slot < limit; slot++) {
      const order = Atomics.load(this.words, slot * WORDS);
      if (order > 0 && this.words[slot * WORDS + 1] === pid) {
        candidates++;
        if (order > bestOrder) {
          best = slot;
          bestOrder = order;
        }
      }
    }
    if (best < 0) return { id: "", candidates: 0 };
    const id = String.fromCharCode(...this.ids.subarray(best * ID_BYTES, (best + 1) * ID_BYTES));
    // Freed (or reused) while it was read: that request is no longer in flight.
    return Atomics.load(this.words, best * WORDS) === bestOrder ? { id, candidates } : { id: "", candidates: candidates - 1 };
  }

  start(pid: number, request: Request): void {
    if (request.eventId.length !== ID_BYTES) return;
    for (let slot = 0; slot < SLOTS; slot++) {
      if (Atomics.compareExchange(this.words, slot * WORDS, 0, -1) !== 0) continue;
      this.words[slot * WORDS + 1] = pid;
      for (let i = 0; i < ID_BYTES; i++) this.ids[slot * ID_BYTES + i] = request.eventId.charCodeAt(i);
      for (let seen = Atomics.load(this.header, 1); seen <= slot; seen = Atomics.load(this.header, 1)) {
        if (Atomics.compareExchange(this.header, 1, seen, slot + 1) === seen) break;
      }
      Atomics.store(this.words, slot * WORDS, Atomics.add(this.header, 0, 1) + 1);
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
