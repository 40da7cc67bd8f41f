export type MemoryGuardOptions = {
  /** MEMORY_LIMIT in bytes. */
  budgetBytes: number;
  /** Above this share of the budget, resident memory is checked for garbage to give back. */
  collectAbove: number;
  /** At most one collection this often, however high memory stays (each pauses the loop for some tens of ms). */
  minIntervalMs: number;
  /** How often resident memory is read. */
  sampleMs: number;
};

export const defaultMemoryGuardOptions = { collectAbove: 0.7, minIntervalMs: 2_000, sampleMs: 250 };

export type MemoryGuardDeps = {
  /** The process's resident set in bytes now. */
  rss: () => number;
  /** A full collection of the JavaScript heap (bun:jsc fullGC), which also lets freed pages go back to the system. */
  collect: () => void;
  now?: () => number;
};

/**
 * What the memory shares (memoryShares) cannot see: the garbage a busy server leaves behind. Under steady load
 * (thousands of requests a second, each a few objects and strings in ingest, the store sink and the live hub)
 * the collector, left to itself, lets the heap grow to several times what is live, and resident memory past
 * MEMORY_LIMIT. This reads the resident set a few times a second and, above a share of the budget, asks for a
 * full collection, at most once per interval.
 */
export class MemoryGuard {
  readonly options: MemoryGuardOptions;
  private timer: ReturnType<typeof setInterval> | null = null;
  private lastCollect = Number.NEGATIVE_INFINITY;
  /** Collections asked for so far (the server's memory log). */
  collections = 0;

  constructor(
    options: Pick<MemoryGuardOptions, "budgetBytes"> & Partial<MemoryGuardOptions>,
    private readonly deps: MemoryGuardDeps,
  ) {
    this.options = { ...defaultMemoryGuardOptions, ...options };
  }

  /** One look: collects when resident memory is above the threshold and the last collection is old enough. */
  check(): boolean {
    const now = (this.deps.now ?? performance.now.bind(performance))();
    if (now - this.lastCollect < this.options.minIntervalMs) return false;
    if (this.deps.rss() <= this.options.budgetBytes * this.options.collectAbove) return false;
    this.lastCollect = now;
    this.collections++;
    this.deps.collect();
    return true;
  }

  start(): void {
    this.timer ??= setInterval(() => this.check(), this.options.sampleMs);
    this.timer.unref?.();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }
}
