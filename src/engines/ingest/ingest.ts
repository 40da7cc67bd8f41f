import type { RouteTemplates } from "~/engines/routes/route-templates.ts";
import { errorMessage } from "~/lib/errors.ts";
import { targetKey } from "~/lib/protocol/channel-key.ts";
import type { TracedEvent } from "~/lib/protocol/event.ts";
import { isEventBatchFrame } from "~/lib/protocol/event-batch.ts";
import { type PendingRequest, pendingLimits, validatePendingRequest } from "~/lib/protocol/pending.ts";
import { type PublishErrorCode, type PublishServerMessage, publishLimits } from "~/lib/protocol/publish.ts";
import { validateEvent } from "~/lib/protocol/validate-event.ts";
import { type BatchValidation, validateEventBatch } from "~/lib/protocol/validate-event-batch.ts";
import { RateLimiter, rateLimitFor } from "~/lib/rate-limit.ts";
import { log } from "~/lib/server/logger.ts";
import { clearSearchTexts, SearchTexts } from "~/store/search-text.ts";
import type { EventSink, EventTarget, Offered } from "./sinks.ts";

export type IngestCounts = {
  accepted: number;
  refused: number;
  rateLimited: number;
  truncated: number;
  /** Messages refused as a whole (too large, not JSON, wrong shape). */
  badMessages: number;
};

const zero = (): IngestCounts => ({ accepted: 0, refused: 0, rateLimited: 0, truncated: 0, badMessages: 0 });

const decoder = new TextDecoder();

/** The ids among `ids` the target's store holds, for events timed between `fromMicros` and `toMicros`. */
export type StoredIds = (target: EventTarget, ids: string[], fromMicros: number, toMicros: number) => Promise<Set<string>>;

/** Events one socket may have looked up as resent: what a publisher can have unanswered when its connection goes. */
const MAX_RESENT_EVENTS = 200_000;

/**
 * One publisher socket's resent messages: looked up one after another (a store query each), no sooner than
 * `settleMs` after the first arrived, and at most MAX_RESENT_EVENTS events in all; beyond that they are taken as new
 * ones (stored again if they were). The wait is a timer's, so it is measured by the process's clock.
 */
export class ResendLookups {
  private events = 0;
  private notBefore = 0;
  private last: Promise<unknown> = Promise.resolve();

  constructor(private readonly settleMs: number) {}

  take(count: number): boolean {
    if (this.events + count > MAX_RESENT_EVENTS) return false;
    if (this.events === 0) this.notBefore = Date.now() + this.settleMs;
    this.events += count;
    return true;
  }

  run<T>(lookUp: () => Promise<T>): Promise<T> {
    const work = async () => {
      const wait = this.notBefore - Date.now();
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
      return lookUp();
    };
    const next = this.last.then(work, work);
    this.last = next.catch(() => undefined);
    return next;
  }
}

/**
 * The server side of publishing, transport-free: one message in, one reply out. Validates, applies the
 * rate limit of the namespace (or link), counts, and hands accepted events to the sinks. Synchronous and
 * bounded in work per message, so it never holds up the publisher's socket.
 */
export class Ingest {
  private readonly namespaceLimiter: RateLimiter;
  /** The plans' per-org limits (billing on), one limiter per rate, keyed by org. */
  private readonly orgLimiters = new Map<number, RateLimiter>();
  private readonly counts = new Map<string, IngestCounts>();
  readonly totals: IngestCounts = zero();
  /** Null: the search fields are left empty (only to measure what making them costs). */
  private readonly searchTexts: SearchTexts | null;

  constructor(
    private readonly sinks: EventSink,
    options: {
      rateLimit: number;
      now?: () => number;
      /** Which of these events the target's store holds (resent messages); absent: nothing is looked up. */
      storedIds?: StoredIds;
      /**
       * How long a resent message waits before it is looked up: the node that took it first may still be alive (only
       * the publisher's connection was lost) and write it within its store sink's flush interval.
       */
      resendSettleMs?: number;
      /** This server is a node of a cluster: each limiter records what it grants for the other nodes (ClusterNode). */
      isShared?: boolean;
      /** Gives each accepted event its route (`http_route`); absent: routes stay as published. */
      routes?: RouteTemplates;
      /** Whether the search fields are made (default); off only where their cost is measured (bench:store). */
      makeSearchTexts?: boolean;
    },
  ) {
    this.routes = options.routes;
    this.searchTexts = options.makeSearchTexts === false ? null : new SearchTexts();
    this.now = options.now ?? Date.now;
    this.storedIds = options.storedIds;
    this.resendSettleMs = options.resendSettleMs ?? 2000;
    this.isShared = options.isShared === true;
    this.namespaceLimiter = new RateLimiter(rateLimitFor(options.rateLimit), { now: this.now, isShared: this.isShared });
    this.pendingLimiter = new RateLimiter({ ratePerSecond: pendingLimits.perSecond, burst: pendingLimits.burst }, { now: this.now });
  }

  /** Notices of requests in flight, per namespace or link: a run with thousands of hung requests shows a bounded few. */
  private readonly pendingLimiter: RateLimiter;

  private readonly now: () => number;
  private readonly storedIds: StoredIds | undefined;
  private readonly routes: RouteTemplates | undefined;

  /** What one publisher socket's resent messages are looked up on (pass it to receive). */
  resendLookups(): ResendLookups {
    return new ResendLookups(this.resendSettleMs);
  }

  /** Whether resent messages are looked up (the publisher's "ready" says so, and it then sends them). */
  get acceptsResent(): boolean {
    return this.storedIds !== undefined;
  }

  private readonly resendSettleMs: number;

  private orgLimiter(ratePerSecond: number): RateLimiter {
    let limiter = this.orgLimiters.get(ratePerSecond);
    if (!limiter) {
      limiter = new RateLimiter(rateLimitFor(ratePerSecond), { now: this.now, isShared: this.isShared });
      this.orgLimiters.set(ratePerSecond, limiter);
    }
    return limiter;
  }

  /**
   * The limiters a cluster's nodes share (engines/cluster): by name, "ns" (per namespace or link) and "org:<rate>" (a
   * plan's per-org limit). `create` makes a plan's limiter another node used first.
   */
  limiter(name: string, create = false): RateLimiter | undefined {
    if (name === "ns") return this.namespaceLimiter;
    const rate = /^org:(\d+)$/.exec(name)?.[1];
    if (!rate) return undefined;
    return create ? this.orgLimiter(Number(rate)) : this.orgLimiters.get(Number(rate));
  }

  limiterNames(): string[] {
    return ["ns", ...[...this.orgLimiters.keys()].map((rate) => `org:${rate}`)];
  }

  private readonly isShared: boolean;

  countsFor(target: EventTarget): IngestCounts {
    return { ...(this.counts.get(targetKey(target)) ?? zero()) };
  }

  /**
   * `data` is what the socket delivered: bytes (a binary event batch, or JSON as UTF-8), a string, or an
   * already parsed object. Never throws for anything a publisher can send. The reply as of now; see receive.
   */
  handle(target: EventTarget, data: unknown): PublishServerMessage {
    return this.receive(target, data).reply;
  }

  /**
   * handle, and the reply to send once the accepted events are stored (null: send `reply` now). The publisher
   * counts events whose message was never answered as dropped, so answering after the store's write keeps its
   * count true through a crash (ADR 0012). Events the store then failed to write are added to storeDropped.
   *
   * A message the publisher marks resent (sent before on a connection lost without an answer) is first looked up
   * in the store, on the socket's `resends`: the events already stored there are not stored or shown again, and
   * count as accepted (`duplicates`). Its reply then comes only through `stored`.
   */
  receive(
    target: EventTarget,
    data: unknown,
    orgLimit?: { orgId: string; ratePerSecond: number },
    resends?: ResendLookups,
  ): { reply: PublishServerMessage; stored: Promise<PublishServerMessage> | null } {
    const key = targetKey(target);
    let counts = this.counts.get(key);
    if (!counts) {
      if (this.counts.size > 100_000) this.counts.clear();
      counts = zero();
      this.counts.set(key, counts);
    }
    const message = this.parse(data);
    if ("code" in message) {
      counts.badMessages++;
      this.totals.badMessages++;
      return { reply: { type: "error", ...message }, stored: null };
    }
    if (message.type === "ping") return { reply: { type: "pong", seq: message.seq }, stored: null };
    if (message.type === "pending") return { reply: this.notePending(target, message.seq, message.requests), stored: null };
    const validated = message.type === "batch" ? message.result : validateAll(message.seq, message.events, message.resent);
    const lookUp = this.storedIds;
    if (!validated.isResent || !lookUp || !resends || validated.events.length === 0 || !resends.take(validated.events.length)) {
      return this.deliver(target, counts, validated, orgLimit);
    }
    const all = validated.events;
    const stored = resends
      .run(() => {
        let from = Number.POSITIVE_INFINITY;
        let to = 0;
        for (const e of all) {
          from = Math.min(from, e.time);
          to = Math.max(to, e.time);
        }
        return lookUp(
          target,
          all.map((e) => e.event_id),
          from,
          to,
        );
      })
      .catch((err: unknown) => {
        log.warn("resent events could not be looked up in the store; all kept", { err: errorMessage(err) });
        return new Set<string>();
      })
      .then((found) => {
        const fresh = found.size === 0 ? all : all.filter((e) => !found.has(e.event_id));
        const duplicates = all.length - fresh.length;
        const delivered = this.deliver(target, counts, { ...validated, events: fresh }, orgLimit);
        const addDuplicates = (reply: PublishServerMessage): PublishServerMessage =>
          reply.type === "ack" && duplicates > 0 ? { ...reply, accepted: reply.accepted + duplicates, duplicates } : reply;
        return delivered.stored ? delivered.stored.then(addDuplicates) : addDuplicates(delivered.reply);
      });
    return {
      reply: {
        type: "ack",
        seq: validated.seq,
        accepted: all.length,
        refused: validated.refused,
        rateLimited: 0,
        truncated: validated.truncated,
      },
      stored,
    };
  }

  /** Requests in flight: validated, bounded per namespace or link, handed to the sinks that show them (never stored). */
  private notePending(target: EventTarget, seq: number, raw: unknown[]): PublishServerMessage {
    const requests: PendingRequest[] = [];
    for (const r of raw) {
      const request = validatePendingRequest(r);
      if (request) requests.push(request);
    }
    const refused = raw.length - requests.length;
    const granted = requests.length > 0 ? this.pendingLimiter.take(targetKey(target), requests.length, this.now()) : 0;
    const rateLimited = requests.length - granted;
    requests.length = granted;
    if (granted > 0) this.sinks.showPending?.(target, requests);
    return { type: "noted", seq, accepted: granted, refused, rateLimited };
  }

  /** Rate limits, hands the events to the sinks, counts; the reply, and once stored the final one. */
  private deliver(
    target: EventTarget,
    counts: IngestCounts,
    validated: BatchValidation,
    orgLimit?: { orgId: string; ratePerSecond: number },
  ): { reply: PublishServerMessage; stored: Promise<PublishServerMessage> | null } {
    const { seq, events: accepted, refused, truncated, errors } = validated;
    const key = targetKey(target);
    let granted = this.namespaceLimiter.take(key, accepted.length, this.now());
    if (orgLimit && granted > 0) granted = this.orgLimiter(orgLimit.ratePerSecond).take(orgLimit.orgId, granted, this.now());
    const rateLimited = accepted.length - granted;
    if (rateLimited > 0) accepted.length = granted;
    let storeDropped = 0;
    let stored: Offered["stored"] = null;
    // The search fields are the server's own, made once here for every sink (the store, the live view, the cluster).
    const searchTexts = this.searchTexts;
    if (searchTexts) {
      const req = validated.frameBodies?.get("http_req_body");
      const resp = validated.frameBodies?.get("http_resp_body");
      for (const event of accepted) searchTexts.fill(event, req?.get(event), resp?.get(event));
    } else for (const event of accepted) clearSearchTexts(event);
    if (accepted.length > 0) {
      this.routes?.assign(target, accepted);
      if (this.sinks.offerDurable) {
        const offered = this.sinks.offerDurable(target, accepted);
        storeDropped = offered.dropped;
        stored = offered.stored;
      } else if (this.sinks.offer) storeDropped = this.sinks.offer(target, accepted);
      else this.sinks.accept(target, accepted);
    }

    counts.accepted += accepted.length;
    counts.refused += refused;
    counts.rateLimited += rateLimited;
    counts.truncated += truncated;
    this.totals.accepted += accepted.length;
    this.totals.refused += refused;
    this.totals.rateLimited += rateLimited;
    this.totals.truncated += truncated;
    const reply: PublishServerMessage = { type: "ack", seq, accepted: accepted.length, refused, rateLimited, truncated };
    if (errors.length > 0) reply.errors = errors;
    if (storeDropped > 0) reply.storeDropped = storeDropped;
    if (!stored) return { reply, stored: null };
    return {
      reply,
      stored: stored.then((failed) => (failed > 0 ? { ...reply, storeDropped: (reply.storeDropped ?? 0) + failed } : reply)),
    };
  }

  private parse(
    data: unknown,
  ):
    | { type: "events"; seq: number; events: unknown[]; resent: boolean }
    | { type: "ping"; seq: number }
    | { type: "pending"; seq: number; requests: unknown[] }
    | { type: "batch"; result: BatchValidation }
    | { code: PublishErrorCode; seq: number | null; message: string } {
    let value = data;
    // One size check for every frame a socket delivers, binary or text, before anything parses it.
    const size =
      data instanceof Uint8Array || data instanceof ArrayBuffer ? data.byteLength : typeof data === "string" ? Buffer.byteLength(data) : 0;
    if (size > publishLimits.maxMessageBytes) {
      return { code: "too_large", seq: null, message: `message of ${size} bytes exceeds ${publishLimits.maxMessageBytes}` };
    }
    if (data instanceof Uint8Array || data instanceof ArrayBuffer) {
      const bytes = data instanceof ArrayBuffer ? new Uint8Array(data) : data;
      if (isEventBatchFrame(bytes)) {
        const result = validateEventBatch(bytes);
        return "error" in result ? { code: result.error, seq: result.seq, message: result.message } : { type: "batch", result };
      }
      value = decoder.decode(bytes);
    }
    if (typeof value === "string") {
      try {
        value = JSON.parse(value);
      } catch {
        return { code: "malformed", seq: null, message: "message is not JSON" };
      }
    }
    if (typeof value !== "object" || value === null || Array.isArray(value)) {
      return { code: "malformed", seq: null, message: "message must be a JSON object" };
    }
    const m = value as { type?: unknown; seq?: unknown; events?: unknown; resent?: unknown; requests?: unknown };
    const seq = typeof m.seq === "number" && Number.isSafeInteger(m.seq) && m.seq >= 0 ? m.seq : null;
    if (seq === null) return { code: "malformed", seq: null, message: "seq must be a non-negative integer" };
    if (m.type === "ping") return { type: "ping", seq };
    if (m.type === "pending") {
      if (!Array.isArray(m.requests)) return { code: "malformed", seq, message: "requests must be a list" };
      if (m.requests.length > pendingLimits.maxPerMessage) {
        return { code: "too_many_events", seq, message: `at most ${pendingLimits.maxPerMessage} pending requests per message` };
      }
      return { type: "pending", seq, requests: m.requests };
    }
    if (m.type !== "events") return { code: "unknown_type", seq, message: 'type must be "events", "pending" or "ping"' };
    if (!Array.isArray(m.events)) return { code: "malformed", seq, message: "events must be a list" };
    if (m.events.length > publishLimits.maxEventsPerMessage) {
      return { code: "too_many_events", seq, message: `at most ${publishLimits.maxEventsPerMessage} events per message` };
    }
    return { type: "events", seq, events: m.events, resent: m.resent === true };
  }
}

/** The JSON path: each event validated on its own. */
function validateAll(seq: number, events: unknown[], isResent: boolean): BatchValidation {
  const accepted: TracedEvent[] = [];
  const errors = new Set<string>();
  let refused = 0;
  let truncated = 0;
  for (const raw of events) {
    const result = validateEvent(raw);
    if (!result.ok) {
      refused++;
      if (errors.size < 5) errors.add(result.error);
      continue;
    }
    truncated += result.truncated;
    accepted.push(result.event);
  }
  return { seq, isResent, events: accepted, refused, truncated, errors: [...errors] };
}
