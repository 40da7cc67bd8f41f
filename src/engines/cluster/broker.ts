import Redis from "ioredis";
import { errorMessage } from "~/lib/errors.ts";
import { log } from "~/lib/server/logger.ts";

/**
 * The message broker that joins a cluster's server nodes: Redis pub/sub through ioredis, which reconnects and takes
 * its subscriptions again by itself (ADR 0021; Bun's own client noticed a dead server only when it next wrote, and
 * lost its subscriptions on reconnecting). Publishing never waits and never queues while Redis is away (a live event
 * that cannot be fanned out now is worth nothing later); what could not be sent is counted.
 */
export type Broker = {
  publish(channel: string, message: string): void;
  subscribe(channel: string, handler: (message: string) => void): Promise<void>;
  /**
   * Sets `key` for `ttlMs` unless it is set: true when this call set it (the first of the cluster to ask). While Redis is
   * away, true (each node's own check still holds): refusing would stop every publisher reconnecting meanwhile.
   */
  claimOnce(key: string, ttlMs: number): Promise<boolean>;
  /**
   * Adds `member` to the bounded set `key` unless it already holds `max` live members, in one atomic step for the whole
   * cluster: true when it was added (or already there). A member lives `ttlMs` unless held again (holdSlots), by
   * Redis's clock. Null while Redis is away: the caller's own count decides then.
   */
  claimSlot(key: string, member: string, max: number, ttlMs: number): Promise<boolean | null>;
  /** Keeps these members of `key` alive for another `ttlMs` (a node's heartbeat for what it holds). */
  holdSlots(key: string, members: readonly string[], ttlMs: number): void;
  releaseSlot(key: string, member: string): void;
  /**
   * Holds the lease `key` for `holder` another `ttlMs` if it holds it or nobody does, in one atomic step: true when
   * `holder` has it now. Null while Redis is away (nobody can tell who holds it).
   */
  holdLease(key: string, holder: string, ttlMs: number): Promise<boolean | null>;
  readonly isConnected: boolean;
  /** Messages that could not be published (the broker was unreachable). */
  readonly unsent: number;
  onStatus(listener: (connected: boolean) => void): void;
  close(): void;
};

/** Redis's own clock in milliseconds, inside a script (allowed since Redis 5: scripts replicate their effects). */
const NOW_MS = "local t = redis.call('TIME') local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)";

/** KEYS[1] the set; ARGV: max, ttl ms, member. Expired members leave first; a member already there is kept. */
const CLAIM_SLOT = `${NOW_MS}
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local ttl = tonumber(ARGV[2])
if not redis.call('ZSCORE', KEYS[1], ARGV[3]) and redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[1]) then return 0 end
redis.call('ZADD', KEYS[1], now + ttl, ARGV[3])
redis.call('PEXPIRE', KEYS[1], ttl * 2)
return 1`;

/** KEYS[1] the set; ARGV: ttl ms, then the members to keep alive. */
const HOLD_SLOTS = `${NOW_MS}
local ttl = tonumber(ARGV[1])
for i = 2, #ARGV do redis.call('ZADD', KEYS[1], now + ttl, ARGV[i]) end
redis.call('PEXPIRE', KEYS[1], ttl * 2)
return 1`;

/** KEYS[1] the lease; ARGV: holder, ttl ms. */
const HOLD_LEASE = `local held = redis.call('GET', KEYS[1])
if held == ARGV[1] then redis.call('PEXPIRE', KEYS[1], ARGV[2]) return 1 end
if held then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1`;

export async function connectRedisBroker(url: string): Promise<Broker> {
  const options = {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    // A dead server is noticed within seconds even on an idle connection.
    keepAlive: 1_000,
    connectTimeout: 5_000,
    retryStrategy: (times: number) => Math.min(100 * times, 1_000),
    lazyConnect: true,
  };
  const publisher = new Redis(url, options);
  const subscriber = new Redis(url, { ...options, autoResubscribe: true });
  const listeners: Array<(connected: boolean) => void> = [];
  const handlers = new Map<string, (message: string) => void>();
  let unsent = 0;
  let connected = false;
  const setStatus = () => {
    const next = publisher.status === "ready" && subscriber.status === "ready";
    if (next === connected) return;
    connected = next;
    if (next) log.info("broker connected", { url: redacted(url) });
    else log.warn("broker unreachable: live events from other server nodes are paused", { url: redacted(url) });
    for (const l of listeners) l(next);
  };
  for (const client of [publisher, subscriber]) {
    client.on("ready", setStatus);
    client.on("close", setStatus);
    client.on("end", setStatus);
    // Reported through status (and the log line it writes); ioredis would otherwise print each retry's error.
    client.on("error", () => {});
  }
  subscriber.on("message", (channel: string, message: string) => handlers.get(channel)?.(message));
  await Promise.all([publisher.connect(), subscriber.connect()]);
  setStatus();
  return {
    publish(channel, message) {
      if (publisher.status !== "ready") {
        unsent++;
        return;
      }
      publisher.publish(channel, message).catch((err: unknown) => {
        unsent++;
        if (unsent === 1 || unsent % 10_000 === 0) log.warn("broker publish failed", { err: errorMessage(err), unsent });
      });
    },
    async claimOnce(key, ttlMs) {
      if (publisher.status !== "ready") return true;
      try {
        return (await publisher.set(key, "1", "PX", Math.max(1, Math.ceil(ttlMs)), "NX")) === "OK";
      } catch (err) {
        log.warn("broker claim failed; this node's own check applies", { err: errorMessage(err) });
        return true;
      }
    },
    async claimSlot(key, member, max, ttlMs) {
      if (publisher.status !== "ready") return null;
      try {
        return (await publisher.eval(CLAIM_SLOT, 1, key, max, Math.max(1, Math.ceil(ttlMs)), member)) === 1;
      } catch (err) {
        log.warn("broker slot claim failed; this node's own count applies", { err: errorMessage(err) });
        return null;
      }
    },
    holdSlots(key, members, ttlMs) {
      if (publisher.status !== "ready" || members.length === 0) return;
      publisher.eval(HOLD_SLOTS, 1, key, Math.max(1, Math.ceil(ttlMs)), ...members).catch((err: unknown) => {
        log.warn("broker could not renew this node's slots", { err: errorMessage(err) });
      });
    },
    releaseSlot(key, member) {
      if (publisher.status !== "ready") return;
      publisher.zrem(key, member).catch(() => {
        // It expires on its own.
      });
    },
    async holdLease(key, holder, ttlMs) {
      if (publisher.status !== "ready") return null;
      try {
        return (await publisher.eval(HOLD_LEASE, 1, key, holder, Math.max(1, Math.ceil(ttlMs)))) === 1;
      } catch (err) {
        log.warn("broker lease failed", { err: errorMessage(err) });
        return null;
      }
    },
    async subscribe(channel, handler) {
      handlers.set(channel, handler);
      await subscriber.subscribe(channel);
    },
    get isConnected() {
      return connected;
    },
    get unsent() {
      return unsent;
    },
    onStatus(listener) {
      listeners.push(listener);
    },
    close() {
      publisher.disconnect();
      subscriber.disconnect();
    },
  };
}

function redacted(url: string): string {
  const u = new URL(url);
  if (u.password) u.password = "***";
  return u.toString();
}
