import type { CapturedEvent } from "~/lib/protocol/event.ts";
import { type EventBatchBuilder, eventBatchBuilder, SEQ_SET_LATER } from "~/lib/protocol/event-batch.ts";
import type { EncodedEvents } from "./batch-sender.ts";
import { estimateBytes } from "./estimate-bytes.ts";

export type FrameLimits = { maxEvents: number; maxBytes: number; intervalMs: number };

/** As the publisher batches events it is given (publish.ts defaults). */
export const defaultFrameLimits: FrameLimits = { maxEvents: 500, maxBytes: 1024 * 1024, intervalMs: 50 };

/**
 * Events encoded into a publish frame as they come (by count, estimated bytes or time), so no event object waits for
 * its batch: the relay thread that built it, or the single relay of `tapscope run`, hands the publisher frames
 * (SEQ_SET_LATER: the publisher numbers them).
 */
export class FrameGatherer {
  private readonly builder: EventBatchBuilder;
  private bytes = 0;
  private timer: ReturnType<typeof setTimeout> | null = null;

  constructor(
    private readonly onFrame: (events: EncodedEvents) => void,
    private readonly limits: FrameLimits = defaultFrameLimits,
  ) {
    this.builder = eventBatchBuilder(Math.min(limits.maxEvents, 512));
  }

  /** Events added and not yet handed on. */
  get count(): number {
    return this.builder.count;
  }

  add(event: CapturedEvent): void {
    const bytes = estimateBytes(event);
    // A very large event goes in a frame of its own: a frame over the server's message limit is dropped whole.
    if (this.builder.count > 0 && this.bytes + bytes > this.limits.maxBytes) this.flush();
    this.builder.add(event);
    this.bytes += bytes;
    if (this.builder.count >= this.limits.maxEvents || this.bytes >= this.limits.maxBytes) this.flush();
    else this.timer ??= unref(setTimeout(() => this.flush(), this.limits.intervalMs));
  }

  /** The events added so far, as one frame, now. */
  flush(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const count = this.builder.count;
    if (count === 0) return;
    const frame = this.builder.finish(SEQ_SET_LATER);
    this.bytes = 0;
    this.onFrame({ frame, count });
  }
}

function unref<T>(timer: T): T {
  (timer as { unref?: () => void }).unref?.();
  return timer;
}
