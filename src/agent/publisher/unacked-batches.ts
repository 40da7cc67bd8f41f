import { setEventBatchResent } from "~/lib/protocol/event-batch.ts";
import type { PublisherCounters } from "./counters.ts";

/**
 * Binary batches sent and not yet answered, kept (up to `maxBytes`) to be sent again, marked resent, when their
 * connection goes before the server answers (ADR 0025): the server drops what it already stored of them. A batch
 * not kept, or that cannot be sent again, is counted dropped.
 */
export class UnackedBatches {
  private readonly frames = new Map<number, Uint8Array>();
  private bytes = 0;
  /** After a lost connection: whether the unanswered batches go again on the next one. */
  isResendDue = false;

  constructor(
    private readonly counters: PublisherCounters,
    private readonly maxBytes: number,
  ) {}

  /** Keeps a sent batch until it is answered, within the bound. */
  keep(seq: number, frame: Uint8Array): void {
    if (this.bytes + frame.byteLength > this.maxBytes) return;
    this.frames.set(seq, frame);
    this.bytes += frame.byteLength;
  }

  /** Batch `seq` was answered (or given up): it will not be sent again. */
  answered(seq: number): void {
    const frame = this.frames.get(seq);
    if (!frame) return;
    this.frames.delete(seq);
    this.bytes -= frame.byteLength;
  }

  /**
   * The connection went: unanswered batches may or may not have arrived (or been stored). Those kept go again on the
   * next connection; the others (JSON to an older server, or past the bound) are counted dropped.
   */
  connectionLost(): void {
    for (const seq of this.counters.unansweredSeqs()) if (!this.frames.has(seq)) this.counters.lostBatch(seq);
    this.isResendDue = this.frames.size > 0;
  }

  /** On the next ready socket: the kept batches again, oldest first, or given up where the server cannot take them. */
  resend(socket: WebSocket | null, isAccepted: boolean): void {
    this.isResendDue = false;
    for (const seq of this.counters.unansweredSeqs()) {
      const frame = this.frames.get(seq);
      if (!isAccepted || !socket || !frame) {
        this.answered(seq);
        this.counters.lostBatch(seq);
        continue;
      }
      setEventBatchResent(frame);
      socket.send(frame);
    }
  }

  clear(): void {
    this.frames.clear();
    this.bytes = 0;
  }
}
