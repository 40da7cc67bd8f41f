import type { ParentTracker } from "./parent-tracker.ts";

/** Inbound requests in flight at once, across all relay threads; beyond this, a request is not offered as a parent. */
const SLOTS = 4096;
/** An event id is a UUID: 36 ASCII characters. */
const ID_BYTES = 36;
/** Per slot in `words`: the slot's order (0 when free, -1 while being written) and its process id. */
const WORDS = 2;
/** Relay threads with a forward counter each (more threads than this are not waited for). */
const THREADS = 64;
/** The longest a lookup that found nothing waits for the threads' forwards in progress (a thread descheduled mid-way). */
const FORWARD_WAIT_MS = 50;

export type SharedParentsBuffer = SharedArrayBuffer;

/** The header's words: the order counter, the slots in use's high-water mark, and lookups waiting on a forward. */
const HEADER = 3;
const HEADER_BYTES = 4 * (HEADER + THREADS);

export function newSharedParentsBuffer(): SharedParentsBuffer {
  // The header, each thread's forward counter, then the slots' words, then their ids.
  return new SharedArrayBuffer(HEADER_BYTES + SLOTS * WORDS * 4 + SLOTS * ID_BYTES);
}

/**
 * The ParentTracker of a run whose inbound connections are relayed on several threads: an outbound call made on the
 * main thread still gets as its parent the newest inbound request of its process, whichever thread parsed that
 * request. Each thread writes the requests it starts into shared slots (an order number, the process id, the event
 * id) and clears them when they finish; `current` reads the newest slot of the process. Slots are taken lowest first,
 * so a read looks only as far as the most requests ever in flight at once (a database call asks on every statement).
 *
 * A relay thread forwards a request's bytes to the program before it parses them (the request is not held up by the
 * parse), so a fast program's call can be looked up on the main thread while that thread, descheduled between the two,
 * has not yet recorded the request. Each thread counts its forwards (odd while one is between its write and its
 * parse): a lookup that finds no request waits for the forwards in progress at that moment, then looks again.
 */
export class SharedParentTracker<Request extends { eventId: string } = { eventId: string }>
  implements Pick<ParentTracker<Request>, "current" | "inflight" | "parent" | "start" | "finish">
{
  /** [0]: the order counter; [1]: one past the highest slot ever taken; [2]: lookups waiting on a forward. */
  private readonly header: Int32Array;
  /** Per relay thread: its forwards begun and ended (odd while one is in progress). */
  private readonly forwards: Int32Array;
  private readonly words: Int32Array;
  private readonly ids: Uint8Array;
  private readonly mine = new Map<Request, number>();

  /**
   * `thread`: the relay thread this tracker serves (its forwards are counted); -1 on the main thread. `forwardWaitMs`:
   * the longest a lookup waits for another thread's forward.
   */
  constructor(
    buffer: SharedParentsBuffer,
    private readonly thread = -1,
    private readonly forwardWaitMs = FORWARD_WAIT_MS,
  ) {
    this.header = new Int32Array(buffer, 0, HEADER);
    this.forwards = new Int32Array(buffer, HEADER * 4, THREADS);
    this.words = new Int32Array(buffer, HEADER_BYTES, SLOTS * WORDS);
    this.ids = new Uint8Array(buffer, HEADER_BYTES + SLOTS * WORDS * 4, SLOTS * ID_BYTES);
  }

  /** This thread is about to forward request bytes it has not parsed yet. */
  forwardBegin(): void {
    if (this.thread >= 0 && this.thread < THREADS) Atomics.add(this.forwards, this.thread, 1);
  }

  /** ...and has parsed them now: a lookup waiting on it looks again. */
  forwardEnd(): void {
    if (this.thread < 0 || this.thread >= THREADS) return;
    Atomics.add(this.forwards, this.thread, 1);
    if (Atomics.load(this.header, 2) > 0) Atomics.notify(this.forwards, this.thread);
  }

  /** Waits (at most forwardWaitMs) for every other thread's forward in progress now; false when there was none. */
  private awaitForwards(): boolean {
    let waited = false;
    const deadline = performance.now() + this.forwardWaitMs;
    for (let t = 0; t < THREADS; t++) {
      if (t === this.thread) continue;
      const seen = Atomics.load(this.forwards, t);
      if ((seen & 1) === 0) continue;
      waited = true;
      Atomics.add(this.header, 2, 1);
      try {
        while (Atomics.load(this.forwards, t) === seen) {
          const left = deadline - performance.now();
          if (left <= 0) break;
          Atomics.wait(this.forwards, t, seen, left);
        }
      } finally {
        Atomics.sub(this.header, 2, 1);
      }
    }
    return waited;
  }

  current(pid: number): string {
    return this.parent(pid).id;
  }

  inflight(pid: number): number {
    return this.parent(pid).candidates;
  }

  /**
   * The newest request of `pid` in flight and how many it has. None found while a thread is forwarding request bytes
   * it has not parsed yet: looked again once it has.
   */
  parent(pid: number): { id: string; candidates: number } {
    const found = this.look(pid);
    return found.candidates === 0 && this.awaitForwards() ? this.look(pid) : found;
  }

  /** One look at the slots. */
  private look(pid: number): { id: string; candidates: number } {
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

  /** Lookups waiting on a thread's forward now (tests). */
  get waitingLookups(): number {
    return Atomics.load(this.header, 2);
  }

  /** Requests this thread has in flight (tests, leak checks). */
  get processes(): number {
    return this.mine.size;
  }
}
