import { AppError } from "~/lib/errors.ts";

/**
 * Per-namespace concurrency limit: at most `max` queries run at once for one namespace, a few more wait,
 * the rest are refused. One busy namespace cannot starve the store for the others.
 */
export class NamespaceGate {
  private readonly running = new Map<string, number>();
  private readonly waiting = new Map<string, Array<() => void>>();

  constructor(
    private readonly max: number,
    private readonly maxQueued: number,
  ) {}

  async run<T>(namespaceId: string, task: () => Promise<T>): Promise<T> {
    await this.acquire(namespaceId);
    try {
      return await task();
    } finally {
      this.release(namespaceId);
    }
  }

  private acquire(ns: string): Promise<void> {
    const n = this.running.get(ns) ?? 0;
    if (n < this.max) {
      this.running.set(ns, n + 1);
      return Promise.resolve();
    }
    const queue = this.waiting.get(ns) ?? [];
    if (queue.length >= this.maxQueued) {
      return Promise.reject(new AppError("RATE_LIMITED", "too many queries at once for this namespace"));
    }
    this.waiting.set(ns, queue);
    return new Promise((resolve) => queue.push(resolve));
  }

  private release(ns: string): void {
    const next = this.waiting.get(ns)?.shift();
    if (next) {
      next(); // the slot passes straight to the next waiter
      return;
    }
    if (this.waiting.get(ns)?.length === 0) this.waiting.delete(ns);
    const n = (this.running.get(ns) ?? 1) - 1;
    if (n <= 0) this.running.delete(ns);
    else this.running.set(ns, n);
  }
}
