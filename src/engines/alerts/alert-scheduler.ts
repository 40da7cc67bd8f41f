import { errorMessage } from "~/lib/errors.ts";
import { log } from "~/lib/server/logger.ts";

export type AlertSchedulerDeps = {
  /** How often the rules are evaluated. */
  evaluateEveryMs: number;
  /** How often due notifications are sent (retries come due in between rounds). */
  deliverEveryMs: number;
  /**
   * In a cluster: holds the alerts' lease for this node another `ttlMs` (Broker.holdLease); false when another node
   * holds it, null when nobody can tell (the broker is away). Absent: this node is the only one.
   */
  holdLease?: (ttlMs: number) => Promise<boolean | null>;
  evaluate: () => Promise<unknown>;
  deliver: () => Promise<unknown>;
};

/**
 * Runs the alert rules' evaluation and their notifications on one node of a cluster at a time: the node holding the
 * alerts' lease (renewed each round, lapsing three rounds after its node stops), so notifications are not sent twice
 * and each namespace's rules cost their queries once per round. The services' writes are conditional as well
 * (services/alerts), so even two nodes at once (a lease handed over mid-round, the broker away) record each change and
 * send each notification once. Rounds never overlap.
 */
export class AlertScheduler {
  private readonly timers: Array<ReturnType<typeof setInterval>> = [];
  private isEvaluating = false;
  private isDelivering = false;
  private isLeader: boolean;

  constructor(private readonly deps: AlertSchedulerDeps) {
    this.isLeader = !deps.holdLease;
  }

  start(): void {
    this.timers.push(
      setInterval(() => void this.evaluateRound(), this.deps.evaluateEveryMs),
      setInterval(() => void this.deliverRound(), this.deps.deliverEveryMs),
    );
    for (const t of this.timers) t.unref();
    void this.evaluateRound();
  }

  stop(): void {
    for (const t of this.timers) clearInterval(t);
    this.timers.length = 0;
  }

  /** Whether this node held the lease at its last round. */
  get holdsLease(): boolean {
    return this.isLeader;
  }

  /** One round of evaluation if this node holds the lease (what the timer runs; tests call it too). */
  async evaluateRound(): Promise<boolean> {
    if (this.isEvaluating) return false;
    this.isEvaluating = true;
    try {
      if (this.deps.holdLease) {
        const held = await this.deps.holdLease(3 * this.deps.evaluateEveryMs);
        // With the broker away nobody can tell: evaluate (the conditional writes keep notifications single).
        this.isLeader = held !== false;
      }
      if (!this.isLeader) return false;
      await this.deps.evaluate();
      // What this round recorded is sent now, not at the next delivery tick.
      void this.deliverRound();
      return true;
    } catch (err) {
      log.warn("alert evaluation failed", { err: errorMessage(err) });
      return false;
    } finally {
      this.isEvaluating = false;
    }
  }

  async deliverRound(): Promise<void> {
    if (this.isDelivering || !this.isLeader) return;
    this.isDelivering = true;
    try {
      await this.deps.deliver();
    } catch (err) {
      log.warn("alert notifications failed", { err: errorMessage(err) });
    } finally {
      this.isDelivering = false;
    }
  }
}
