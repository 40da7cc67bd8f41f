import { randomUUID } from "node:crypto";
import { AppError } from "~/lib/errors.ts";
import { noReplayRunText, type ReplayAnswer, type ReplayOrder, replayLimits } from "~/lib/protocol/replay.ts";

/** A run's publish socket that said it allows replays: how to hand it an order. */
export type ReplayRun = { namespaceId: string; service: string; send(order: ReplayOrder): void };

type Pending = {
  runKey: object;
  resolve: (answer: ReplayAnswer) => void;
  reject: (err: Error) => void;
  timer: ReturnType<typeof setTimeout>;
};

/**
 * The runs connected to this node that allow replays, by namespace, and the orders sent to them waiting for their
 * answer (bounded in number and time). A run's answer is taken only from the socket the order went to.
 */
export class ReplayRuns {
  private readonly runs = new Map<object, ReplayRun>();
  private readonly pending = new Map<string, Pending>();

  /** The socket (its identity is the key) said hello with allowsReplay; again on a later hello replaces it. */
  register(key: object, run: ReplayRun): void {
    this.runs.set(key, run);
  }

  /** The socket closed: it serves no more orders, and those waiting on it fail now. */
  unregister(key: object): void {
    this.runs.delete(key);
    for (const [id, p] of this.pending) {
      if (p.runKey !== key) continue;
      this.pending.delete(id);
      clearTimeout(p.timer);
      p.reject(new AppError("UNAVAILABLE", "the run disconnected before it answered; the request may or may not have been sent"));
    }
  }

  /** Whether a run of the namespace allows replays now. */
  has(namespaceId: string): boolean {
    for (const run of this.runs.values()) if (run.namespaceId === namespaceId) return true;
    return false;
  }

  /** The run for an event of `service`: one of that service, else any of the namespace; null when none. */
  private pick(namespaceId: string, service: string): [object, ReplayRun] | null {
    let any: [object, ReplayRun] | null = null;
    for (const entry of this.runs) {
      if (entry[1].namespaceId !== namespaceId) continue;
      if (entry[1].service === service) return entry;
      any ??= entry;
    }
    return any;
  }

  /** Sends the order to a run of the namespace and waits for its answer (or the timeout). */
  send(namespaceId: string, service: string, order: Omit<ReplayOrder, "type" | "id">): Promise<ReplayAnswer> {
    const picked = this.pick(namespaceId, service);
    if (!picked) return Promise.reject(new AppError("CONFLICT", noReplayRunText));
    if (this.pending.size >= replayLimits.maxPending) {
      return Promise.reject(new AppError("RATE_LIMITED", "too many requests are being resent right now; try again in a moment"));
    }
    const [runKey, run] = picked;
    const id = randomUUID();
    return new Promise<ReplayAnswer>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new AppError("UNAVAILABLE", `the run did not answer within ${replayLimits.serverTimeoutMs / 1000} s`));
      }, replayLimits.serverTimeoutMs);
      this.pending.set(id, { runKey, resolve, reject, timer });
      run.send({ type: "replay", id, ...order });
    });
  }

  /** An answer from `key`'s socket; one for an order it was not sent, or one already answered, is ignored. */
  answered(key: object, answer: ReplayAnswer): void {
    const p = this.pending.get(answer.id);
    if (!p || p.runKey !== key) return;
    this.pending.delete(answer.id);
    clearTimeout(p.timer);
    p.resolve(answer);
  }
}
