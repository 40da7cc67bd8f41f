import { randomUUID } from "node:crypto";

/**
 * Where a cluster keeps each org's publishers in one bounded set (Redis, through the broker), so that a place is taken
 * atomically across nodes. Null from `claim`: the broker is away.
 */
export type SharedSlots = {
  claim(orgId: string, slotId: string, max: number, ttlMs: number): Promise<boolean | null>;
  hold(orgId: string, slotIds: readonly string[], ttlMs: number): void;
  release(orgId: string, slotId: string): void;
};

/** How long a place lives without its node renewing it: a reservation whose socket never opened, a node that died. */
const SLOT_TTL_MS = 5_000;
/** How often a node renews the places its open sockets hold. */
const HOLD_EVERY_MS = 1_000;

/**
 * Publishers per org: what the containers limit counts. A publish socket takes its place at the upgrade (`reserve`, in
 * one step: on one node JavaScript runs it whole, in a cluster a Redis script does), holds it while open (`connected`)
 * and gives it back when it closes; a reservation whose socket never opens lapses after a few seconds. In a cluster
 * `setRemote` adds the other nodes' counts to `count` (JoinPublisher's early answer, and the count used while Redis is
 * away).
 */
export class OrgPublishers {
  /** This node's places per org: slot id -> when it lapses (Infinity while its socket is open). */
  private readonly slots = new Map<string, Map<string, number>>();
  private remote: ReadonlyMap<string, number> = new Map();
  private timer: ReturnType<typeof setInterval> | null = null;

  constructor(private readonly deps: { shared?: SharedSlots; now?: () => number } = {}) {}

  private now(): number {
    return this.deps.now?.() ?? Date.now();
  }

  /**
   * A place for one more publisher of the org under `max`, or null when the org has that many (connected, or reserved
   * moments ago on any node). Give the id to `connected` when the socket opens.
   */
  async reserve(orgId: string, max: number): Promise<string | null> {
    const slotId = randomUUID();
    const shared = this.deps.shared ? await this.deps.shared.claim(orgId, slotId, max, SLOT_TTL_MS) : null;
    if (shared === false) return null;
    // From here to the place being taken nothing waits, so two upgrades on this node cannot both see room for one.
    if (shared === null && this.count(orgId) >= max) return null;
    this.place(orgId).set(slotId, this.now() + SLOT_TTL_MS);
    return slotId;
  }

  /** A publisher's socket opened, in its reserved place (or, with no limit to check, a new one); returns the place. */
  connected(orgId: string, slotId: string = randomUUID()): string {
    this.place(orgId).set(slotId, Number.POSITIVE_INFINITY);
    if (this.deps.shared) this.timer ??= unref(setInterval(() => this.holdShared(), HOLD_EVERY_MS));
    return slotId;
  }

  disconnected(orgId: string, slotId: string): void {
    const places = this.slots.get(orgId);
    if (!places?.delete(slotId)) return;
    if (places.size === 0) this.slots.delete(orgId);
    this.deps.shared?.release(orgId, slotId);
    if (this.slots.size === 0 && this.timer) {
      clearInterval(this.timer);
      this.timer = null;
    }
  }

  /** Places taken in the org on this node (open and freshly reserved) and, from their presence, on the others. */
  count(orgId: string): number {
    return this.live(orgId) + (this.remote.get(orgId) ?? 0);
  }

  /** This node's open publishers per org (what it tells the other nodes). */
  local(): ReadonlyMap<string, number> {
    const counts = new Map<string, number>();
    for (const [orgId, places] of this.slots) {
      let open = 0;
      for (const lapses of places.values()) if (lapses === Number.POSITIVE_INFINITY) open++;
      if (open > 0) counts.set(orgId, open);
    }
    return counts;
  }

  /** The other nodes' counts together, replacing the last ones. */
  setRemote(counts: ReadonlyMap<string, number>): void {
    this.remote = counts;
  }

  /** Stops renewing (the node is shutting down: its places lapse in the shared set). */
  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  private place(orgId: string): Map<string, number> {
    let places = this.slots.get(orgId);
    if (!places) {
      places = new Map();
      this.slots.set(orgId, places);
    }
    return places;
  }

  /** Live places of the org here; lapsed reservations are forgotten. */
  private live(orgId: string): number {
    const places = this.slots.get(orgId);
    if (!places) return 0;
    const now = this.now();
    for (const [slotId, lapses] of places) if (lapses <= now) places.delete(slotId);
    if (places.size === 0) this.slots.delete(orgId);
    return places.size;
  }

  private holdShared(): void {
    for (const [orgId, places] of this.slots) {
      const open = [...places].filter(([, lapses]) => lapses === Number.POSITIVE_INFINITY).map(([slotId]) => slotId);
      this.deps.shared?.hold(orgId, open, SLOT_TTL_MS);
    }
  }
}

function unref<T>(timer: T): T {
  (timer as { unref?: () => void }).unref?.();
  return timer;
}
