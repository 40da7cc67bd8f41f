import type { TracedEvent } from "~/lib/protocol/event.ts";

/** The rows the live store made from pending notices (they are events with every unknown field empty). */
const pendingRows = new WeakSet<TracedEvent>();

export function markPendingRow(event: TracedEvent): void {
  pendingRows.add(event);
}

export function isPendingRow(event: TracedEvent): boolean {
  return pendingRows.has(event);
}
