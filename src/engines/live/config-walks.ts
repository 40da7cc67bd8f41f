import { compileFilterChips, type EventPredicate, type FilterMeter, filterMeter } from "~/lib/filter/evaluate.ts";
import type { TracedEvent } from "~/lib/protocol/event.ts";
import type { LiveClientMessage, LiveServerMessage } from "~/lib/protocol/live.ts";
import type { FilterAllowance, FilterPayer } from "./filter-allowance.ts";
import type { HistoryEntry } from "./history.ts";
import type { LiveHubOptions } from "./options.ts";
import type { Subscriber } from "./subscriber.ts";

/** How long history walks wait when the filter allowance they draw on is spent. */
const allowanceWaitMs = 10;

/** A config being checked against the retained history, a slice at a time; it takes effect when the walk is done. */
export type Walk = {
  sub: Subscriber;
  revision: number;
  configKey: string;
  predicate: EventPredicate;
  meter: FilterMeter;
  nextSeq: number;
  spent: number;
  matches: HistoryEntry<TracedEvent>[];
};

/** A config that passed its walk: what the viewer's filters become, and the retained events it matched. */
export type AppliedConfig = Pick<Walk, "revision" | "configKey" | "predicate" | "meter" | "matches">;

/** What the walks need of the hub. */
export type ConfigWalkHooks = {
  /** Whether the viewer's address may put this filter set in force (FilterGroups.hasRoomForFilterSet). */
  hasRoomForFilterSet(sub: Subscriber, configKey: string): boolean;
  payerOf(sub: Subscriber): FilterPayer;
  /** The walk ended well: the config is to take effect. */
  apply(sub: Subscriber, config: AppliedConfig): void;
  /** The config was refused (setFilterError), or a message about it is due. */
  tell(sub: Subscriber, message: LiveServerMessage): void;
};

/**
 * New configs, checked against the retained history in slices that yield to the event loop (ADR 0013): all viewers'
 * compiling and walks together take at most filterSliceSteps per event-loop turn, and each draws on its address's and
 * the process's filter allowance. A config takes effect only when its walk is done, and is refused if it spends more
 * steps than one event or the whole history may; the previous config stays in force meanwhile.
 */
export class ConfigWalks {
  /** Configs being checked against histories, in turn; one slice of steps per event-loop turn in all. */
  private walks: Walk[] = [];
  /** Subscribers whose latest config waits to be compiled, in the order they asked. */
  private readonly requests = new Set<Subscriber>();
  private walkTimer: ReturnType<typeof setTimeout> | null = null;
  /** Filter steps spent on configs (compiling and walks) in this event-loop turn, all viewers together. */
  private turnSteps = 0;
  private turnReset: ReturnType<typeof setImmediate> | null = null;

  constructor(
    private readonly options: LiveHubOptions,
    private readonly allowance: FilterAllowance,
    private readonly hooks: ConfigWalkHooks,
  ) {}

  /** Only the latest config is answered: one waiting or still being checked is abandoned. */
  request(sub: Subscriber, message: LiveClientMessage): void {
    if (sub.isClosed) return;
    sub.requested = message;
    this.cancel(sub);
    if (this.requests.has(sub) || this.turnStepsLeft() <= 0) {
      this.requests.add(sub);
      this.schedule();
      return;
    }
    this.start(sub);
  }

  /** The viewer left, or asked for a newer config: what it waited for or was being checked is dropped. */
  forget(sub: Subscriber): void {
    sub.requested = null;
    this.requests.delete(sub);
    this.cancel(sub);
  }

  private cancel(sub: Subscriber): void {
    if (sub.walk) this.end(sub.walk);
  }

  /** Compiles the subscriber's latest config and checks it against the history as far as this turn's steps go. */
  private start(sub: Subscriber): void {
    const message = sub.requested;
    sub.requested = null;
    if (!message || sub.isClosed) return;
    const configKey = JSON.stringify(message.filters);
    if (!this.hooks.hasRoomForFilterSet(sub, configKey)) {
      const most = this.allowance.options.filterSetsPerAddress;
      this.hooks.tell(sub, {
        type: "setFilterError",
        revision: message.revision,
        message: `too many different live filters from this address (at most ${most} at once): close other views or share their filters`,
        index: 0,
        position: 0,
      });
      return;
    }
    const meter = filterMeter();
    const compiled = compileFilterChips(message.filters, meter);
    this.spendTurn(compiled.compileSteps);
    this.allowance.spend(this.hooks.payerOf(sub), compiled.compileSteps);
    if (!compiled.ok) {
      this.hooks.tell(sub, { type: "setFilterError", revision: message.revision, ...compiled.error });
      return;
    }
    const walk: Walk = {
      sub,
      revision: message.revision,
      configKey,
      predicate: compiled.predicate,
      meter,
      nextSeq: sub.channel.history.firstSeq,
      spent: 0,
      matches: [],
    };
    sub.walk = walk;
    // A cheap config over a short history is done at once; the rest waits its turn.
    if (!this.advanceWithinTurn(walk, this.turnStepsLeft())) {
      this.walks.push(walk);
      this.schedule();
    }
  }

  /**
   * Checks up to `budget` steps' worth of the history against the walk's config. True when the walk ended
   * (applied or refused) in this call; false when it must go on later.
   */
  private advance(walk: Walk, budget: number): boolean {
    const { filterStepsPerEvent, filterHistorySteps } = this.options;
    const history = walk.sub.channel.history;
    const meter = walk.meter;
    let spent = 0;
    let seq = Math.max(walk.nextSeq, history.firstSeq);
    for (; seq < history.endSeq; seq++) {
      if (spent >= budget) {
        walk.nextSeq = seq;
        return false;
      }
      const entry = history.at(seq)!;
      meter.left = filterStepsPerEvent;
      meter.ranOutAt = null;
      const isMatch = walk.predicate(entry.item);
      // At least a step per event, so a walk of free filters still yields on a long history.
      const cost = filterStepsPerEvent - meter.left + 1;
      spent += cost;
      walk.spent += cost;
      if (meter.left < 0) {
        const at = meter.ranOutAt ?? { index: 0, position: 0 };
        this.refuse(walk, `more than ${filterStepsPerEvent.toLocaleString("en")} steps for one event`, at);
        return true;
      }
      if (walk.spent > filterHistorySteps) {
        this.refuse(walk, `more than ${filterHistorySteps.toLocaleString("en")} steps for the retained events`, { index: 0, position: 0 });
        return true;
      }
      if (isMatch) walk.matches.push(entry);
    }
    this.end(walk);
    this.hooks.apply(walk.sub, walk);
    return true;
  }

  private refuse(walk: Walk, what: string, at: { index: number; position: number }): void {
    this.end(walk);
    this.hooks.tell(walk.sub, {
      type: "setFilterError",
      revision: walk.revision,
      message: `filter too costly for the live view (${what}): use a simpler regex or fewer conditions`,
      ...at,
    });
  }

  private end(walk: Walk): void {
    if (walk.sub.walk === walk) walk.sub.walk = null;
    const k = this.walks.indexOf(walk);
    if (k >= 0) this.walks.splice(k, 1);
  }

  /** Advances a walk by up to `budget` steps, as far as its address's and the process's allowance go. */
  private advanceWithinTurn(walk: Walk, budget: number): boolean {
    const payer = this.hooks.payerOf(walk.sub);
    const allowed = Math.min(budget, this.allowance.available(payer));
    if (allowed <= 0) return false;
    const before = walk.spent;
    const isDone = this.advance(walk, allowed);
    this.spendTurn(walk.spent - before);
    this.allowance.spend(payer, walk.spent - before);
    return isDone;
  }

  private turnStepsLeft(): number {
    return this.options.filterSliceSteps - this.turnSteps;
  }

  private spendTurn(steps: number): void {
    this.turnSteps += steps;
    this.turnReset ??= setImmediate(() => {
      this.turnReset = null;
      this.turnSteps = 0;
    });
  }

  private schedule(delayMs = 0): void {
    this.walkTimer ??= setTimeout(() => this.run(), delayMs);
  }

  /** This turn's config work: waiting configs compiled first, then walks in turn, until the turn's steps are spent. */
  private run(): void {
    this.walkTimer = null;
    let unaffordable = 0;
    while (this.turnStepsLeft() > 0 && (this.requests.size > 0 || this.walks.length > 0)) {
      const [sub] = this.requests;
      if (sub) {
        this.requests.delete(sub);
        this.start(sub);
        continue;
      }
      const walk = this.walks.shift()!;
      const share = Math.max(1, Math.ceil(this.turnStepsLeft() / (this.walks.length + 1)));
      const before = walk.spent;
      if (this.advanceWithinTurn(walk, share)) {
        unaffordable = 0;
        continue;
      }
      this.walks.push(walk);
      unaffordable = walk.spent === before ? unaffordable + 1 : 0;
      // No walk could spend a step (their allowances are spent): they go on once the allowance has refilled.
      if (unaffordable >= this.walks.length) {
        this.schedule(allowanceWaitMs);
        return;
      }
    }
    if (this.requests.size > 0 || this.walks.length > 0) this.schedule();
  }
}
