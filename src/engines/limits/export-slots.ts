export type ExportSlotsOptions = {
  /** Exports running at once, all callers together (from a share of MEMORY_LIMIT: exportSlotsFor). */
  inAll: number;
  /** Exports running at once for one caller (a user or a token). */
  perCaller: number;
  /** Exports one caller may have waiting for a place; one more is refused. */
  waitingPerCaller: number;
};

type Waiter = { key: string; admit: (release: () => void) => void };

/** What one running export holds at most: a page of bodies as text with its copies, and the response's buffer. */
export const exportBytesEach = 16 * 1024 * 1024;

/** Places for `shareBytes` of memory (a share of MEMORY_LIMIT), at least one, and two per caller. */
export function exportSlotsFor(shareBytes: number): ExportSlotsOptions {
  const inAll = Math.max(1, Math.floor(shareBytes / exportBytesEach));
  return { inAll, perCaller: Math.min(2, inAll), waitingPerCaller: 2 };
}

/**
 * Places for long exports (HAR downloads): a few run at once per caller and in all, a few more wait their turn in
 * the order they came, and past that the caller is told to come back (`acquire` answers null).
 */
export class ExportSlots {
  private running = 0;
  private readonly byCaller = new Map<string, { running: number; waiting: number }>();
  private readonly queue: Waiter[] = [];

  constructor(readonly options: ExportSlotsOptions) {}

  /** Resolves with the release of a place once there is one; null at once when the caller already waits for too many. */
  acquire(key: string): Promise<(() => void) | null> {
    const caller = this.caller(key);
    // Waiting for a place only this caller's own exports hold would be for nothing: refused at once.
    if (!this.hasRoom(caller) && caller.waiting >= this.options.waitingPerCaller) {
      this.forgetIfIdle(key);
      return Promise.resolve(null);
    }
    caller.waiting++;
    const admitted = new Promise<() => void>((resolve) => this.queue.push({ key, admit: resolve }));
    this.admitWaiting();
    return admitted;
  }

  /** Exports running now, all callers together. */
  get runningNow(): number {
    return this.running;
  }

  private hasRoom(caller: { running: number }): boolean {
    return this.running < this.options.inAll && caller.running < this.options.perCaller;
  }

  private take(key: string): () => void {
    const caller = this.caller(key);
    caller.running++;
    this.running++;
    let isReleased = false;
    return () => {
      if (isReleased) return;
      isReleased = true;
      caller.running--;
      this.running--;
      this.forgetIfIdle(key);
      this.admitWaiting();
    };
  }

  /** Every waiter, in arrival order, whose caller has room now, while there is room in all. */
  private admitWaiting(): void {
    for (let i = 0; i < this.queue.length && this.running < this.options.inAll; i++) {
      const waiter = this.queue[i]!;
      const caller = this.caller(waiter.key);
      if (!this.hasRoom(caller)) continue;
      this.queue.splice(i, 1);
      i--;
      caller.waiting--;
      waiter.admit(this.take(waiter.key));
    }
  }

  private caller(key: string): { running: number; waiting: number } {
    let caller = this.byCaller.get(key);
    if (!caller) {
      caller = { running: 0, waiting: 0 };
      this.byCaller.set(key, caller);
    }
    return caller;
  }

  private forgetIfIdle(key: string): void {
    const caller = this.byCaller.get(key);
    if (caller && caller.running === 0 && caller.waiting === 0) this.byCaller.delete(key);
  }
}
