import { TokenBucket } from "~/lib/rate-limit.ts";

export type FilterAllowanceOptions = {
  /** Filter steps per second for every live filter of the process together, and the most spent at once. */
  stepsPerSecond: number;
  burstSteps: number;
  /** The part of that anonymous viewers (of shared links) get together. */
  anonymousShare: number;
  /** The part one client address gets, across every channel it watches. */
  addressShare: number;
  /** Distinct filter sets one client address may have in force at once, over every channel. */
  filterSetsPerAddress: number;
};

export const defaultFilterAllowanceOptions: FilterAllowanceOptions = {
  stepsPerSecond: 8_000_000,
  burstSteps: 400_000,
  anonymousShare: 0.5,
  addressShare: 0.25,
  filterSetsPerAddress: 32,
};

/** Who pays for a filter set's steps: the client address that set it, and whether it watches a shared link. */
export type FilterPayer = { address: string; isAnonymous: boolean };

type AddressState = { bucket: TokenBucket; filterSets: number };

/** Addresses remembered before the idle ones are swept out (each is a bucket and a count). */
const sweepAbove = 1024;

/**
 * The process-wide allowance of live filter steps (ADR 0013 budgets each filter set and each channel; this bounds
 * their sum over any number of channels). Every step spent on a new event or a history walk comes out of the
 * process's bucket, the anonymous viewers' bucket when the viewer watches a shared link, and its address's bucket;
 * what none of them can afford is not evaluated (the events are dropped for those viewers and reported).
 */
export class FilterAllowance {
  readonly options: FilterAllowanceOptions;
  private readonly all: TokenBucket;
  private readonly anonymous: TokenBucket;
  private readonly byAddress = new Map<string, AddressState>();

  constructor(
    options: Partial<FilterAllowanceOptions> = {},
    private readonly clock: () => number = Date.now,
  ) {
    this.options = { ...defaultFilterAllowanceOptions, ...options };
    const o = this.options;
    this.all = new TokenBucket({ ratePerSecond: o.stepsPerSecond, burst: o.burstSteps }, clock());
    this.anonymous = new TokenBucket(
      { ratePerSecond: o.stepsPerSecond * o.anonymousShare, burst: o.burstSteps * o.anonymousShare },
      clock(),
    );
  }

  /** Steps the payer may spend now (below zero while a debt is paid back). */
  available(payer: FilterPayer, now = this.clock()): number {
    let steps = Math.min(this.all.available(now), this.state(payer.address, now).bucket.available(now));
    if (payer.isAnonymous) steps = Math.min(steps, this.anonymous.available(now));
    return steps;
  }

  spend(payer: FilterPayer, steps: number): void {
    if (steps <= 0) return;
    this.all.spend(steps);
    this.state(payer.address, this.clock()).bucket.spend(steps);
    if (payer.isAnonymous) this.anonymous.spend(steps);
  }

  /** Whether the address may put one more distinct filter set in force. */
  hasRoomForFilterSet(address: string): boolean {
    return (this.byAddress.get(address)?.filterSets ?? 0) < this.options.filterSetsPerAddress;
  }

  /** A distinct filter set came into force (taken) or went (given back) for this address. */
  countFilterSet(address: string, by: 1 | -1): void {
    const state = this.state(address, this.clock());
    state.filterSets = Math.max(0, state.filterSets + by);
    this.forgetIdle(address, state);
  }

  private state(address: string, now: number): AddressState {
    let state = this.byAddress.get(address);
    if (!state) {
      if (this.byAddress.size >= sweepAbove) this.sweep();
      const o = this.options;
      state = {
        bucket: new TokenBucket({ ratePerSecond: o.stepsPerSecond * o.addressShare, burst: o.burstSteps * o.addressShare }, now),
        filterSets: 0,
      };
      this.byAddress.set(address, state);
    }
    return state;
  }

  /** Forgets every address with no filter set in force and a full bucket. */
  private sweep(): void {
    for (const [address, state] of this.byAddress) this.forgetIdle(address, state);
  }

  /** An address with no filter set and a full bucket is forgotten (it would start full again). */
  private forgetIdle(address: string, state: AddressState): void {
    if (state.filterSets === 0 && state.bucket.available(this.clock()) >= this.options.burstSteps * this.options.addressShare) {
      this.byAddress.delete(address);
    }
  }
}
