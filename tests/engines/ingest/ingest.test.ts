import { describe, expect, test } from "bun:test";
import { Ingest } from "~/engines/ingest/ingest.ts";
import { EventSinks, type EventTarget } from "~/engines/ingest/sinks.ts";
import type { TracedEvent } from "~/lib/protocol/event.ts";
import { type PendingRequest, pendingLimits } from "~/lib/protocol/pending.ts";
import { publishLimits, TRUNCATION_MARKER } from "~/lib/protocol/publish.ts";
import { validateEvent } from "~/lib/protocol/validate-event.ts";
import { sampleEvent } from "../../support/publish-server.ts";
import { rng } from "../../support/rng.ts";

function randomValue(rnd: () => number, depth = 0): unknown {
  const r = rnd();
  if (r < 0.15) return null;
  if (r < 0.3) return Math.floor(rnd() * 1e6) * (rnd() < 0.5 ? -1 : 1);
  if (r < 0.4) return rnd() < 0.5;
  if (r < 0.6) return "x".repeat(Math.floor(rnd() * 20));
  if (r < 0.7) return Number.NaN;
  if (depth > 2) return "deep";
  if (r < 0.85) return Array.from({ length: Math.floor(rnd() * 4) }, () => randomValue(rnd, depth + 1));
  return Object.fromEntries(Array.from({ length: Math.floor(rnd() * 4) }, (_, i) => [`k${i}`, randomValue(rnd, depth + 1)]));
}

const target: EventTarget = { namespaceId: "00000000-0000-0000-0000-000000000001", linkId: null };

describe("ingest validation", () => {
  test("a valid event passes through unchanged", () => {
    const event = sampleEvent({ tags: { a: "b" } });
    const result = validateEvent(JSON.parse(JSON.stringify(event)));
    expect(result).toEqual({ ok: true, event, truncated: 0 });
  });

  test("missing optional fields get neutral values (older agents); unknown fields are dropped", () => {
    const result = validateEvent({ time: 1_700_000_000_000_000, event_id: "0b0f3c1e-8d2a-4a57-9a3e-1d2c3b4a5f60", surprise: "x" });
    if (!result.ok) throw new Error(result.error);
    expect(result.event.http_req_content_length).toBe(-1);
    expect(result.event.timing_wait).toBe(-1);
    expect(result.event.http_req_headers).toEqual([]);
    expect(result.event.protocol).toBe("http");
    expect("surprise" in result.event).toBe(false);
  });

  test("a plan's per-org rate limit: the org's namespaces share one bucket (100/s, bursts of 1,000); over it is counted rate-limited", () => {
    let nowMs = 1_000_000;
    const sinks = new EventSinks();
    let delivered = 0;
    sinks.add({
      accept: (_t, events) => {
        delivered += events.length;
      },
    });
    const ingest = new Ingest(sinks, { rateLimit: 0, now: () => nowMs });
    const other: EventTarget = { namespaceId: "00000000-0000-0000-0000-000000000002", linkId: null };
    const org = { orgId: "org-1", ratePerSecond: 100 };
    const batch = (seq: number, n: number) => ({ type: "events", seq, events: Array.from({ length: n }, () => sampleEvent()) });
    const first = ingest.receive(target, batch(1, 600), org).reply;
    const second = ingest.receive(other, batch(2, 600), org).reply;
    expect([first.type === "ack" && first.rateLimited, second.type === "ack" && second.rateLimited]).toEqual([0, 200]);
    nowMs += 1000; // a second later: 100 more
    const later = ingest.receive(other, batch(3, 150), org).reply;
    expect(later.type === "ack" && later.rateLimited).toBe(50);
    // Without the org limit (billing off, or a trial) nothing is held back.
    const free = ingest.receive(target, batch(4, 600)).reply;
    expect(free.type === "ack" && free.rateLimited).toBe(0);
    expect(delivered).toBe(600 + 400 + 100 + 600);
  });

  test("fuzz: random fields and messages never throw, and only well-typed events reach the sinks", () => {
    const delivered: TracedEvent[] = [];
    const sinks = new EventSinks();
    sinks.add({ accept: (_t, events) => delivered.push(...events) });
    const ingest = new Ingest(sinks, { rateLimit: 0 });
    const keys = Object.keys(sampleEvent());
    for (let seed = 1; seed <= 2000; seed++) {
      const rnd = rng(seed);
      const event: Record<string, unknown> = { ...sampleEvent() };
      const edits = 1 + Math.floor(rnd() * 4);
      for (let i = 0; i < edits; i++) event[keys[Math.floor(rnd() * keys.length)]!] = randomValue(rnd);
      const message = rnd() < 0.1 ? randomValue(rnd) : { type: "events", seq: seed, events: [event] };
      const data = rnd() < 0.5 ? new TextEncoder().encode(JSON.stringify(message) ?? "null") : message;
      const reply = ingest.handle(target, data);
      expect(["ack", "error"]).toContain(reply.type);
    }
    expect(delivered.length).toBeGreaterThan(100);
    for (const e of delivered) {
      expect(typeof e.http_req_path).toBe("string");
      expect(Number.isFinite(e.http_duration)).toBe(true);
      expect(Array.isArray(e.http_req_headers)).toBe(true);
      expect(typeof e.http_is_outgoing).toBe("boolean");
    }
    expect(ingest.totals.accepted).toBe(delivered.length);
  });

  test("validation keeps up: over 20,000 events/s even on a loaded 2-core machine (about 300,000 unloaded)", () => {
    const events = Array.from({ length: 20_000 }, () => JSON.parse(JSON.stringify(sampleEvent())));
    const started = performance.now();
    for (const e of events) validateEvent(e);
    const perSecond = events.length / ((performance.now() - started) / 1000);
    expect(perSecond).toBeGreaterThan(20_000);
  });
});

describe("requests in flight (pending notices)", () => {
  const request = (over: Record<string, unknown> = {}) => ({
    event_id: crypto.randomUUID(),
    time: Date.now() * 1000,
    http_req_method: "GET",
    http_req_path: "/hang",
    ...over,
  });

  function recording() {
    const stored: TracedEvent[] = [];
    const shown: PendingRequest[] = [];
    const sinks = new EventSinks();
    // A store takes events only; a live view takes pending requests too.
    sinks.add({ accept: (_t, events) => stored.push(...events) });
    sinks.add({ accept() {}, showPending: (_t, requests) => shown.push(...requests) });
    return { sinks, stored, shown };
  }

  test("valid notices reach the live sinks only, never a store, and are answered noted; bad ones are counted refused", () => {
    const { sinks, stored, shown } = recording();
    const ingest = new Ingest(sinks, { rateLimit: 0 });
    const good = request({ http_req_path: `/hang?${"q".repeat(20_000)}`, http_is_outgoing: true, service: "api" });
    const reply = ingest.handle(target, {
      type: "pending",
      seq: 7,
      requests: [
        good,
        request({ event_id: "x" }),
        request({ time: -1 }),
        request({ http_req_method: 5 }),
        request({ http_req_method: "" }),
        "no",
      ],
    });
    expect(reply).toEqual({ type: "noted", seq: 7, accepted: 1, refused: 5, rateLimited: 0 });
    expect(stored).toEqual([]);
    expect(shown).toHaveLength(1);
    expect(shown[0]!.event_id).toBe(good.event_id);
    expect(shown[0]!.http_is_outgoing).toBe(true);
    expect(shown[0]!.service).toBe("api");
    // Cut to the size an event's path may have, marked as cut.
    expect(shown[0]!.http_req_path.length).toBe(publishLimits.maxPathChars);
    expect(shown[0]!.http_req_path).toEndWith(TRUNCATION_MARKER);
    // Not events: nothing counted as accepted events.
    expect(ingest.countsFor(target).accepted).toBe(0);
  });

  test("a message of too many notices is refused whole; a flood is bounded per namespace, not per program", () => {
    const { sinks, shown } = recording();
    let nowMs = 1_000_000;
    const ingest = new Ingest(sinks, { rateLimit: 0, now: () => nowMs });
    const tooMany = Array.from({ length: pendingLimits.maxPerMessage + 1 }, () => request());
    expect(ingest.handle(target, { type: "pending", seq: 1, requests: tooMany })).toMatchObject({ type: "error", code: "too_many_events" });
    expect(ingest.handle(target, { type: "pending", seq: 2, requests: "x" })).toMatchObject({ type: "error", code: "malformed" });
    expect(shown).toEqual([]);

    // 10,000 hung requests from several programs: the viewers get the burst, then the rate.
    let accepted = 0;
    let limited = 0;
    for (let i = 0; i < 100; i++) {
      const reply = ingest.handle(target, { type: "pending", seq: 10 + i, requests: Array.from({ length: 100 }, () => request()) });
      if (reply.type !== "noted") throw new Error(JSON.stringify(reply));
      accepted += reply.accepted;
      limited += reply.rateLimited;
    }
    expect(accepted).toBe(pendingLimits.burst);
    expect(limited).toBe(10_000 - pendingLimits.burst);
    expect(shown).toHaveLength(pendingLimits.burst);
    nowMs += 1000;
    const later = ingest.handle(target, { type: "pending", seq: 200, requests: Array.from({ length: 100 }, () => request()) });
    expect(later).toMatchObject({ type: "noted", accepted: pendingLimits.perSecond });
    // Another namespace has its own bound.
    const elsewhere = { namespaceId: "00000000-0000-0000-0000-000000000002", linkId: null };
    expect(ingest.handle(elsewhere, { type: "pending", seq: 1, requests: [request()] })).toMatchObject({ accepted: 1 });
  });
});

describe("the search fields at ingest", () => {
  const ingestWith = (makeSearchTexts?: boolean) => {
    const sinks = new EventSinks();
    const got: TracedEvent[] = [];
    sinks.add({ accept: (_t, events) => got.push(...events) });
    return { ingest: new Ingest(sinks, { rateLimit: 0, makeSearchTexts }), got };
  };
  const forged = () =>
    sampleEvent({
      http_req_headers: [["X-Request-Id", "rid-1"]],
      search_req_headers: "\nx-request-id: forged\n",
      search_req_body: "forged",
    });

  test("are the server's own: what a publisher sends in them is replaced", () => {
    const { ingest, got } = ingestWith();
    ingest.receive(target, { type: "events", seq: 1, events: [forged()] });
    expect(got[0]!.search_req_headers).toBe("\nx-request-id: rid-1\n");
    expect(got[0]!.search_req_body).not.toBe("forged");
  });

  test("left out (only to measure their cost), they are empty, never the publisher's", () => {
    const { ingest, got } = ingestWith(false);
    ingest.receive(target, { type: "events", seq: 1, events: [forged()] });
    expect([got[0]!.search_req_headers, got[0]!.search_req_body]).toEqual(["", ""]);
  });
});
