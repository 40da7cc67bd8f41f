import type { ChannelTarget } from "~/lib/protocol/channel-key.ts";
import type { TracedEvent } from "~/lib/protocol/event.ts";
import type { PendingRequest } from "~/lib/protocol/pending.ts";

/**
 * Where accepted events go after ingest validated them: the namespace's store (issue 4) and the
 * live fan-out to subscribers (issue 5). A run with a token publishes into its namespace; an anonymous
 * run publishes into its shared link (and namespaceId is null).
 */
export type EventTarget = ChannelTarget;

export type EventSink = {
  /** Must not block: called on the publisher socket's path. */
  accept(target: EventTarget, events: readonly TracedEvent[]): void;
  /** accept, returning how many of the events had to be dropped at once (so the publisher can be told). */
  offer?(target: EventTarget, events: readonly TracedEvent[]): number;
  /**
   * offer, for a sink that stores: `stored` settles once the kept events are written, to how many of them the
   * store failed to write. Ingest acknowledges a publisher's message only then (ADR 0012), so an ack means stored.
   */
  offerDurable?(target: EventTarget, events: readonly TracedEvent[]): Offered;
  /** Requests still waiting for their answer (validated): for sinks that show events live; a store never gets them. */
  showPending?(target: EventTarget, requests: readonly PendingRequest[]): void;
};

/** What an offer dropped at once, and when the rest is durable (null: nothing of it waits for a store). */
export type Offered = { dropped: number; stored: Promise<number> | null };

/** Fans accepted events out to every registered sink; a failing sink never affects the others. */
export class EventSinks implements EventSink {
  private readonly sinks: EventSink[] = [];

  add(sink: EventSink): () => void {
    this.sinks.push(sink);
    return () => {
      const i = this.sinks.indexOf(sink);
      if (i >= 0) this.sinks.splice(i, 1);
    };
  }

  accept(target: EventTarget, events: readonly TracedEvent[]): void {
    this.offer(target, events);
  }

  showPending(target: EventTarget, requests: readonly PendingRequest[]): void {
    for (const sink of this.sinks) {
      try {
        sink.showPending?.(target, requests);
      } catch {
        // As for events: one bad sink must not stop delivery to the rest.
      }
    }
  }

  /** The most any one sink dropped of these events. */
  offer(target: EventTarget, events: readonly TracedEvent[]): number {
    return this.offerDurable(target, events).dropped;
  }

  /** The most any one sink dropped, and once every storing sink has written: the most any failed to write. */
  offerDurable(target: EventTarget, events: readonly TracedEvent[]): Offered {
    let dropped = 0;
    const stored: Promise<number>[] = [];
    for (const sink of this.sinks) {
      try {
        if (sink.offerDurable) {
          const offered = sink.offerDurable(target, events);
          dropped = Math.max(dropped, offered.dropped);
          if (offered.stored) stored.push(offered.stored);
        } else if (sink.offer) dropped = Math.max(dropped, sink.offer(target, events));
        else sink.accept(target, events);
      } catch {
        // A sink reports its own failures; one bad sink must not stop delivery to the rest.
      }
    }
    return { dropped, stored: stored.length > 0 ? Promise.all(stored).then((failed) => Math.max(...failed)) : null };
  }
}
