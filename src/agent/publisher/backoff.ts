/**
 * Reconnect delays: from `minMs`, doubling up to `maxMs`, each with ±25 % jitter so publishers that lost the
 * same server do not all come back at once. `reset` after a connection that worked.
 */
export class Backoff {
  private current: number;

  constructor(
    readonly minMs: number,
    readonly maxMs: number,
    private readonly random: () => number = Math.random,
  ) {
    this.current = minMs;
  }

  /** The next delay in ms; the one after is twice as long (up to maxMs). */
  next(): number {
    const delay = Math.round(this.current * (0.75 + this.random() * 0.5));
    this.current = Math.min(this.maxMs, this.current * 2);
    return delay;
  }

  reset(): void {
    this.current = this.minMs;
  }
}
