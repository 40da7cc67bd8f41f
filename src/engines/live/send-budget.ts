export type SendBudgetOptions = {
  /** What the sockets of all viewers together may hold unsent. */
  totalBytes: number;
  /**
   * What one viewer may hold unsent: its queue beyond this is dropped (oldest first, and reported); a socket that
   * holds more by itself is closed. At least a full history message and a socket's worth of batches.
   */
  perViewerBytes: number;
  /** Over the total, a viewer whose socket holds less than this once sent to is let be: it keeps up, another does not. */
  keepingUpBytes: number;
};

/**
 * The live view's send memory. A viewer's queue holds the same event strings as the other viewers' of its link
 * or namespace (each event is serialized once), so it is bounded per viewer; what a socket holds unsent is that
 * socket's own copy, so it counts against a budget for all (a share of MEMORY_LIMIT) as well. A viewer that does
 * not read is closed when its socket goes over either, rather than buffered.
 */
export class SendBudget {
  private held = 0;
  private readonly holders = new Map<object, number>();

  constructor(readonly options: SendBudgetOptions) {}

  /** Bytes the viewers' sockets hold unsent, all together, as last recorded. */
  get heldBytes(): number {
    return this.held;
  }

  /** Whether `bytes` more would still fit in the budget for all viewers. */
  canTake(bytes: number): boolean {
    return this.held + bytes <= this.options.totalBytes;
  }

  /**
   * Records what `viewer`'s socket holds unsent now. False when it must be closed: over its own bound, or, where
   * `isSettled` (its socket was just given what it could take), holding part of an overrun total. A viewer that
   * reads holds next to nothing once sent to, so it is never the one closed.
   */
  update(viewer: object, socketBytes: number, isSettled: boolean): boolean {
    this.held += socketBytes - (this.holders.get(viewer) ?? 0);
    this.holders.set(viewer, socketBytes);
    if (socketBytes > this.options.perViewerBytes) return false;
    return !isSettled || this.held <= this.options.totalBytes || socketBytes < this.options.keepingUpBytes;
  }

  /** The viewer left: what it held no longer counts. */
  release(viewer: object): void {
    this.held -= this.holders.get(viewer) ?? 0;
    this.holders.delete(viewer);
  }
}
