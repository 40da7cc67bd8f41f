import { log } from "~/lib/server/logger.ts";

/**
 * Broker messages and node calls refused at the edge (not JSON, too long, of the wrong shape; events that fail the
 * publish validator), counted by what they were. Dropping one costs the live view or a call that message only; each
 * kind's first refusal is logged, then every tenfold count, so a node sending garbage cannot flood the log.
 */
export class RefusedMessages {
  private readonly counts = new Map<string, number>();

  /** `what`: the broker channel or node call ("live", "presence", "call:history", ...). */
  count(what: string, why: string, n = 1): void {
    const before = this.counts.get(what) ?? 0;
    const after = before + n;
    this.counts.set(what, after);
    if (before === 0 || Math.floor(Math.log10(after)) > Math.floor(Math.log10(before))) {
      log.warn("cluster: refused a message from another node", { what, why, refused: after });
    }
  }

  /** How many were refused, of one kind or in all. */
  total(what?: string): number {
    if (what !== undefined) return this.counts.get(what) ?? 0;
    let n = 0;
    for (const c of this.counts.values()) n += c;
    return n;
  }
}
