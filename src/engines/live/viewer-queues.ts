import type { TracedEvent } from "~/lib/protocol/event.ts";
import { type LiveServerMessage, slowViewerCloseCode } from "~/lib/protocol/live.ts";
import type { HistoryEntry } from "./history.ts";
import type { LiveHubOptions } from "./options.ts";
import type { SendBudget } from "./send-budget.ts";
import type { Subscriber } from "./subscriber.ts";

const retryDelayMs = 20;

/**
 * Each viewer's queue of matching events and how it is sent: coalesced until the end of the loop turn (or
 * flushIntervalMs), in batches of at most maxBatch events and maxBatchBytes, only while the viewer's socket keeps up
 * (a full one is looked at again after a pause, or on drain). What a viewer holds unsent counts against the send
 * budget: past its own bound the oldest are dropped and reported; a socket over a bound is closed with a reason.
 */
export class ViewerQueues {
  private readonly dirty = new Set<Subscriber>();
  private timer: { cancel: () => void } | null = null;
  private readonly retry = new Set<Subscriber>();
  private retryTimer: ReturnType<typeof setTimeout> | null = null;
  /**
   * Batches built in this flush round, by config: viewers with the same filters were sent the same events, so
   * the message is built once and sent to each (checked: same length, same first and last event).
   */
  private batchCache = new Map<string, { length: number; first: string; last: string; text: string }>();

  constructor(
    private readonly options: LiveHubOptions,
    private readonly sendBudget: SendBudget,
    /** Takes a viewer out of the hub (it is then closed here with the reason). */
    private readonly unsubscribe: (sub: Subscriber) => void,
  ) {}

  /** One matching event for the viewer; a full batch goes at once, the rest at the end of the turn. */
  enqueue(sub: Subscriber, json: string): void {
    sub.pending.push(json);
    sub.pendingBytes += json.length;
    if (!this.account(sub, false)) return;
    if (sub.pending.length >= this.options.maxBatch || sub.pendingBytes >= this.options.maxBatchBytes) {
      this.flush(sub);
      return;
    }
    this.markDirty(sub);
  }

  /** Events the viewer will not get (its filters could not afford them): reported with the next send. */
  countDropped(sub: Subscriber, count: number): void {
    sub.droppedTotal += count;
    sub.droppedUnreported += count;
    this.markDirty(sub);
  }

  /** The viewer left: nothing more is sent to it, and what it held no longer counts. */
  forget(sub: Subscriber): void {
    sub.pending = [];
    sub.pendingBytes = 0;
    sub.owedHistory = null;
    this.sendBudget.release(sub);
    this.dirty.delete(sub);
    this.retry.delete(sub);
  }

  /**
   * A new config is in force: what waited was chosen by the old one, and the history covers everything up to now
   * under the new one. The history is sent now, or when the socket drains (only the latest is owed).
   */
  restart(sub: Subscriber, history: HistoryEntry<TracedEvent>[], applied: LiveServerMessage): void {
    sub.pending = [];
    sub.pendingBytes = 0;
    this.dirty.delete(sub);
    this.sendControl(sub, applied);
    if (sub.transport.bufferedAmount() > this.options.maxBufferedBytes) {
      sub.owedHistory = history;
      this.retryLater(sub);
    } else {
      sub.owedHistory = null;
      this.sendHistory(sub, history);
    }
  }

  /** Sends now whatever waits for every subscriber (tests and shutdown). */
  flushAll(): void {
    if (this.timer) {
      this.timer.cancel();
      this.timer = null;
    }
    const subs = [...this.dirty, ...this.retry];
    this.dirty.clear();
    this.retry.clear();
    for (const sub of subs) this.flush(sub);
    this.batchCache.clear();
  }

  /** Sends what waits for one subscriber, as far as its socket keeps up; the rest waits (bounded) for drain. */
  flush(sub: Subscriber): void {
    if (sub.isClosed) return;
    this.dirty.delete(sub);
    if (sub.transport.bufferedAmount() > this.options.maxBufferedBytes) {
      this.trim(sub);
      if (this.account(sub, true)) this.retryLater(sub); // And on drain, whichever comes first.
      return;
    }
    if (sub.owedHistory) {
      const entries = sub.owedHistory;
      sub.owedHistory = null;
      this.sendHistory(sub, entries);
    }
    if (sub.droppedUnreported > 0) {
      this.sendControl(sub, { type: "dropped", count: sub.droppedUnreported, total: sub.droppedTotal });
      sub.droppedUnreported = 0;
    }
    while (sub.pending.length > 0) {
      const batch = this.takeBatch(sub);
      const status = sub.transport.send(this.batchText(sub.configKey, batch));
      if (status === 0) {
        sub.droppedTotal += batch.length;
        sub.droppedUnreported += batch.length;
        break;
      }
      if (status < 0 || sub.transport.bufferedAmount() > this.options.maxBufferedBytes) break;
    }
    this.trim(sub);
    if (!this.account(sub, true)) return;
    if (sub.pending.length > 0 || sub.droppedUnreported > 0) this.retryLater(sub);
  }

  /**
   * Counts what the viewer holds unsent against the send budget: its queue past the per-viewer bound is dropped
   * (oldest first, reported), and a viewer whose socket is over a bound is closed with a reason (it reconnects
   * and gets the history, or stays away). False when it was closed.
   */
  account(sub: Subscriber, isSettled: boolean): boolean {
    const socketBytes = sub.transport.bufferedAmount();
    const room = this.sendBudget.options.perViewerBytes - socketBytes;
    let over = 0;
    while (over < sub.pending.length && sub.pendingBytes > room) sub.pendingBytes -= sub.pending[over++]!.length;
    if (over > 0) {
      sub.pending.splice(0, over);
      this.countDropped(sub, over);
    }
    if (this.sendBudget.update(sub, socketBytes, isSettled)) return true;
    this.unsubscribe(sub);
    sub.transport.close(slowViewerCloseCode, "this viewer read too slowly: it was closed to keep the server's memory bounded");
    // A close frame waits behind what the socket holds, which a viewer that does not read never takes: its
    // buffers are let go now rather than when its connection times out.
    if (socketBytes >= this.sendBudget.options.keepingUpBytes) sub.transport.terminate?.();
    return false;
  }

  sendHistory(sub: Subscriber, entries: readonly HistoryEntry<TracedEvent>[]): void {
    const history = sub.channel.history;
    const parts = entries.map((entry) => history.json(entry));
    sub.transport.send(`{"type":"history","revision":${sub.revision},"events":[${parts.join(",")}]}`);
  }

  sendControl(sub: Subscriber, message: LiveServerMessage): void {
    sub.transport.send(JSON.stringify(message));
  }

  private markDirty(sub: Subscriber): void {
    this.dirty.add(sub);
    if (this.timer) return;
    const run = () => {
      this.timer = null;
      this.flushAll();
    };
    if (this.options.flushIntervalMs > 0) {
      const handle = setTimeout(run, this.options.flushIntervalMs);
      this.timer = { cancel: () => clearTimeout(handle) };
    } else {
      const handle = setImmediate(run);
      this.timer = { cancel: () => clearImmediate(handle) };
    }
  }

  private trim(sub: Subscriber): void {
    const over = sub.pending.length - this.options.queueLimit;
    if (over <= 0) return;
    for (const json of sub.pending.splice(0, over)) sub.pendingBytes -= json.length;
    sub.droppedTotal += over;
    sub.droppedUnreported += over;
  }

  /** The oldest pending events, up to maxBatch of them and maxBatchBytes (at least one). */
  private takeBatch(sub: Subscriber): string[] {
    const { maxBatch, maxBatchBytes } = this.options;
    let n = 0;
    let bytes = 0;
    while (n < sub.pending.length && n < maxBatch) {
      const length = sub.pending[n]!.length;
      if (n > 0 && bytes + length > maxBatchBytes) break;
      bytes += length;
      n++;
    }
    sub.pendingBytes -= bytes;
    return sub.pending.splice(0, n);
  }

  /** A subscriber whose socket is full is looked at again after a pause, not on every loop turn. */
  private retryLater(sub: Subscriber): void {
    this.retry.add(sub);
    this.retryTimer ??= setTimeout(() => {
      this.retryTimer = null;
      const subs = [...this.retry];
      this.retry.clear();
      for (const s of subs) this.flush(s);
      this.batchCache.clear();
    }, retryDelayMs);
  }

  private batchText(configKey: string, batch: string[]): string {
    const first = batch[0]!;
    const last = batch[batch.length - 1]!;
    const cached = this.batchCache.get(configKey);
    if (cached && cached.length === batch.length && cached.first === first && cached.last === last) return cached.text;
    const text = `{"type":"events","events":[${batch.join(",")}]}`;
    this.batchCache.set(configKey, { length: batch.length, first, last, text });
    return text;
  }
}
