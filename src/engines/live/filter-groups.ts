import type { EventPredicate, FilterMeter } from "~/lib/filter/evaluate.ts";
import { isLinkKey } from "~/lib/protocol/channel-key.ts";
import type { TracedEvent } from "~/lib/protocol/event.ts";
import { TokenBucket } from "~/lib/rate-limit.ts";
import type { Channel } from "./channels.ts";
import type { FilterAllowance, FilterPayer } from "./filter-allowance.ts";
import type { LiveHubOptions } from "./options.ts";
import type { Subscriber } from "./subscriber.ts";

/**
 * Subscribers with the same filters: evaluated once per event, spending from their bucket of steps and from the
 * process's allowance as `payer` (the address that set them; null for no filters, which cost nothing).
 */
export type FilterGroup = {
  predicate: EventPredicate;
  meter: FilterMeter;
  members: Set<Subscriber>;
  bucket: TokenBucket;
  isEmpty: boolean;
  payer: FilterPayer | null;
};

/**
 * A channel's viewers grouped by filters, and what evaluating a group's filters on a new event may cost (ADR 0013):
 * at most filterStepsPerEvent, and what the group's bucket (its own rate or its share of the channel's) and the
 * process's filter allowance hold now.
 */
export class FilterGroups {
  constructor(
    private readonly options: LiveHubOptions,
    private readonly allowance: FilterAllowance,
    private readonly now: () => number,
  ) {}

  /** Puts the viewer in the group of its config in force, made if it is the first with those filters. */
  join(sub: Subscriber): void {
    const groups = sub.channel.groups;
    let group = groups.get(sub.configKey);
    if (!group) {
      const isEmpty = sub.configKey === "[]";
      group = {
        predicate: sub.predicate,
        meter: sub.meter,
        members: new Set(),
        bucket: new TokenBucket({ ratePerSecond: this.options.filterStepsPerSecond, burst: this.options.filterBurstSteps }, this.now()),
        isEmpty,
        payer: isEmpty ? null : this.payerOf(sub),
      };
      if (group.payer) this.allowance.countFilterSet(group.payer.address, 1);
      groups.set(sub.configKey, group);
    }
    group.members.add(sub);
  }

  leave(sub: Subscriber): void {
    const group = sub.channel.groups.get(sub.configKey);
    if (!group) return;
    group.members.delete(sub);
    const payer = group.payer;
    if (group.members.size === 0) {
      sub.channel.groups.delete(sub.configKey);
      if (payer) this.allowance.countFilterSet(payer.address, -1);
      return;
    }
    // The filter set stays for the others: one of them pays for it from now on.
    if (payer && payer.address === sub.address && ![...group.members].some((m) => m.address === payer.address)) {
      const next = this.payerOf(group.members.values().next().value!);
      this.allowance.countFilterSet(payer.address, -1);
      this.allowance.countFilterSet(next.address, 1);
      group.payer = next;
    }
  }

  payerOf(sub: Subscriber): FilterPayer {
    return { address: sub.address, isAnonymous: isLinkKey(sub.channel.key) };
  }

  /**
   * Whether a config would fit the address's cap on distinct filter sets: none is needed for no filters or for
   * filters already in force on the channel, and the viewer's own set is given back if it is its only user.
   */
  hasRoomForFilterSet(sub: Subscriber, configKey: string): boolean {
    if (configKey === "[]" || sub.channel.groups.has(configKey)) return true;
    const own = sub.channel.groups.get(sub.configKey);
    const isFreed = own?.payer?.address === sub.address && own.members.size === 1;
    return isFreed || this.allowance.hasRoomForFilterSet(sub.address);
  }

  /**
   * Whether the group's filters match the event: null when they cannot afford it (more steps than one event may
   * take, or than the group's bucket holds now). Empty filters cost nothing.
   */
  evaluate(channel: Channel, group: FilterGroup, event: TracedEvent, now: number): boolean | null {
    if (group.isEmpty) return true;
    const o = this.options;
    const n = channel.groups.size;
    const rate = Math.min(o.filterStepsPerSecond, o.channelFilterStepsPerSecond / n);
    const burst = Math.min(o.filterBurstSteps, o.channelFilterBurstSteps / n);
    group.bucket.setLimit(rate, burst);
    const payer = group.payer!;
    const allowance = Math.min(o.filterStepsPerEvent, group.bucket.available(now), this.allowance.available(payer, now));
    if (allowance <= 0) return null;
    const meter = group.meter;
    meter.left = allowance;
    meter.ranOutAt = null;
    const isMatch = group.predicate(event);
    group.bucket.spend(allowance - meter.left);
    this.allowance.spend(payer, allowance - meter.left);
    return meter.left < 0 ? null : isMatch;
  }
}
