import { heapStats } from "bun:jsc";
import { describe, expect, test } from "bun:test";
import { Ingest } from "~/engines/ingest/ingest.ts";
import { EventSinks, type EventTarget } from "~/engines/ingest/sinks.ts";
import type { CapturedEvent, TracedEvent } from "~/lib/protocol/event.ts";
import { encodeEventBatch, SEQ_SET_LATER, setEventBatchSeq } from "~/lib/protocol/event-batch.ts";
import { type PublishServerMessage, publishLimits, TRUNCATION_MARKER } from "~/lib/protocol/publish.ts";
import { SearchTexts } from "~/store/search-text.ts";
import { generateEvents } from "../../store/generate.ts";
import { tracedEvent } from "../../support/event-factory.ts";
import { rng } from "../../support/rng.ts";

const target: EventTarget = { namespaceId: "00000000-0000-0000-0000-000000000001", linkId: null };
const encoder = new TextEncoder();

/** The real server path (Ingest.handle) with a sink that records what it is given. */
function ingestWithSink() {
  const delivered: TracedEvent[] = [];
  const sinks = new EventSinks();
  sinks.add({ accept: (_t, events) => delivered.push(...events) });
  return { ingest: new Ingest(sinks, { rateLimit: 0 }), delivered };
}

const base64 = (body: string | Uint8Array | undefined) => (body instanceof Uint8Array ? Buffer.from(body).toString("base64") : body);
/** What the publisher sent before binary batches: the event as JSON, bodies as base64. */
function jsonMessage(seq: number, events: readonly CapturedEvent[]): Uint8Array {
  const traced = events.map((e) => ({ ...e, http_req_body: base64(e.http_req_body), http_resp_body: base64(e.http_resp_body) }));
  return encoder.encode(JSON.stringify({ type: "events", seq, events: traced }));
}

/** Both paths on fresh ingests, one message per group: their replies and what reached the sink. */
function throughBoth(groups: ReadonlyArray<readonly CapturedEvent[]>) {
  const json = ingestWithSink();
  const binary = ingestWithSink();
  const jsonReplies = groups.map((events, seq) => json.ingest.handle(target, jsonMessage(seq, events)));
  const binaryReplies = groups.map((events, seq) => binary.ingest.handle(target, encodeEventBatch(seq, events)));
  return { jsonReplies, binaryReplies, jsonEvents: json.delivered, binaryEvents: binary.delivered };
}

const bytes = (s: string) => new Uint8Array(Buffer.from(s));
/** An event as ingest hands it on: with the search fields the server makes (src/store/search-text.ts). */
function withSearch(e: TracedEvent): TracedEvent {
  const copy = structuredClone(e);
  new SearchTexts().fill(copy);
  return copy;
}
const id = (n: number) => `0b0f3c1e-8d2a-4a57-9a3e-${n.toString(16).padStart(12, "0")}`;

describe("binary event batches through Ingest.handle", () => {
  test("round trip: every field set comes out as sent, bodies as bytes become base64", () => {
    const event = tracedEvent({
      parent_event_id: id(9),
      gcp_project: "proj",
      kubernetes_namespace: "ns",
      gke_cluster_location: "europe-west1",
      gke_cluster_name: "c1",
      gke_node_name: "node-1",
      tls_server_name: "api.example.com",
      protocol: "http",
      http_version: "2",
      http_is_outgoing: true,
      http_req_method: "POST",
      http_req_transfer_encoding: "chunked",
      http_req_content_type: "application/json",
      http_req_content_encoding: "gzip",
      http_req_content_length: 17,
      http_req_x_forwarded_for: "10.0.0.1",
      http_req_body_size_bytes_wire: 17,
      http_req_body_truncated: true,
      http_resp_status_code: 503,
      http_resp_transfer_encoding: "chunked",
      http_resp_content_encoding: "br",
      http_resp_body_truncated: true,
      timing_connect: 5,
      timing_tls: 12_345,
      http_req_headers: [
        ["Host", "a"],
        ["X-Dup", "1"],
        ["X-Dup", "2"],
      ],
      tags: { region: "eu", kind: "outbound", tls: "decrypted", tls_alpn: "h2" },
    });
    const captured: CapturedEvent = { ...event, http_req_body: bytes('{"a":1}'), http_resp_body: new Uint8Array([0, 255, 1, 254]) };
    const { ingest, delivered } = ingestWithSink();
    const reply = ingest.handle(target, encodeEventBatch(41, [captured]));
    expect(reply).toEqual({ type: "ack", seq: 41, accepted: 1, refused: 0, rateLimited: 0, truncated: 0 });
    expect(delivered).toEqual([withSearch({ ...event, http_req_body: "eyJhIjoxfQ==", http_resp_body: "AP8B/g==" })]);
  });

  test("bodies as base64 strings and as bytes give the same event", () => {
    const event = tracedEvent({ http_req_body: "aGVsbG8=", http_resp_body: "" });
    const a = ingestWithSink();
    const b = ingestWithSink();
    a.ingest.handle(target, encodeEventBatch(1, [event]));
    b.ingest.handle(target, encodeEventBatch(1, [{ ...event, http_req_body: bytes("hello"), http_resp_body: new Uint8Array(0) }]));
    expect(a.delivered).toEqual([withSearch(event)]);
    expect(b.delivered).toEqual(a.delivered);
  });

  test("a frame encoded before its seq is known (a relay thread's) is acknowledged under the seq set when it is sent", () => {
    const events = [tracedEvent({ http_req_path: "/a" }), tracedEvent({ http_req_path: "/b" })];
    const frame = encodeEventBatch(SEQ_SET_LATER, events);
    const { ingest, delivered } = ingestWithSink();
    for (const seq of [7, 123456789012]) {
      setEventBatchSeq(frame, seq);
      expect(ingest.handle(target, frame)).toMatchObject({ type: "ack", seq, accepted: 2 });
    }
    expect(delivered.map((e) => e.http_req_path)).toEqual(["/a", "/b", "/a", "/b"]);
    // Only such a frame has room for it; a negative or fractional seq is refused.
    expect(() => setEventBatchSeq(encodeEventBatch(3, events), 4)).toThrow("not a frame whose seq is set later");
    expect(() => setEventBatchSeq(frame, -1)).toThrow();
    expect(() => setEventBatchSeq(frame, 1.5)).toThrow();
  });

  test("an empty batch is acknowledged with zero counts", () => {
    const { ingest, delivered } = ingestWithSink();
    expect(ingest.handle(target, encodeEventBatch(5, []))).toEqual({
      type: "ack",
      seq: 5,
      accepted: 0,
      refused: 0,
      rateLimited: 0,
      truncated: 0,
    });
    expect(delivered).toEqual([]);
  });

  test("parity: realistic, unicode, oversized and invalid events give the JSON path's acks and events", () => {
    const now = Date.now() * 1000;
    const base = () => tracedEvent({ event_id: crypto.randomUUID(), time: now });
    const big = (n: number) => "y".repeat(n);
    const events: CapturedEvent[] = [
      ...generateEvents({ count: 200, startMicros: now - 60_000_000, endMicros: now, seed: 7 }),
      { ...base(), http_req_path: `/${"é".repeat(9000)}`, service: "ÿ" },
      { ...base(), event_id: id(1).toUpperCase() },
      // Oversized fields: cut to their limits and counted.
      { ...base(), http_req_path: big(20_000), process_command_line: big(5000), hostname: big(2000), http_version: big(17) },
      { ...base(), http_req_headers: Array.from({ length: 300 }, (_, i) => [`h${i}`, "v"] as [string, string]) },
      { ...base(), http_resp_headers: [[big(300), big(9000)]] },
      { ...base(), tags: Object.fromEntries(Array.from({ length: 70 }, (_, i) => [`t${i}`, "v"])) },
      { ...base(), tags: { [big(200)]: big(2000), __proto__: "kept as a key" } as unknown as Record<string, string> },
      // Numbers out of range, fractional, negative zero and not finite: clamped, truncated or neutral.
      {
        ...base(),
        time: now + 0.75,
        process_id: 2 ** 40,
        http_resp_status_code: 5000,
        http_duration: -3,
        timing_send: -0.5,
        timing_wait: -0,
        timing_receive: Number.NaN,
        bytes_sent: Number.POSITIVE_INFINITY,
        http_req_content_length: -7.9,
      },
      { ...base(), protocol: "tcp" },
      // Refused, each with its reason.
      { ...base(), event_id: "not-a-uuid" },
      { ...base(), event_id: "" },
      { ...base(), time: 0 },
      { ...base(), time: -5 },
      { ...base(), time: Number.NaN },
      { ...base(), time: 9e18 },
      { ...base(), protocol: "smtp" as "http" },
      { ...base(), http_resp_body: "<script>not base64</script>" },
      { ...base(), http_req_body: "%%%" },
      // An older agent's event without most fields.
      { time: now, event_id: id(2) } as unknown as CapturedEvent,
    ];
    // Bodies over the limit (cut on a base64 quantum), each in a message of its own (a JSON message holds 4 MiB).
    const bodies: CapturedEvent[][] = [
      [{ ...base(), http_resp_body: "A".repeat(publishLimits.maxBodyChars + 10) }],
      [{ ...base(), http_req_body: new Uint8Array(1024 * 1024 + 7).fill(7) }],
      [{ ...base(), http_req_body: new Uint8Array(1024 * 1024 + 2).fill(9) }],
    ];
    // Unicode beyond Latin-1: astral characters and lone surrogates (JSON carries them as \\ud800 escapes).
    const beyondLatin1: CapturedEvent[] = [
      {
        ...base(),
        service: "sérvice 😀",
        http_req_path: "/a\ud800b",
        http_req_headers: [["x-emoji", "🎉\udfff"]],
        tags: { ключ: "\ud83d" },
      },
      { ...base(), http_req_path: `/${"€".repeat(9000)}` },
    ];
    const { jsonReplies, binaryReplies, jsonEvents, binaryEvents } = throughBoth([events, beyondLatin1, ...bodies]);
    expect(jsonReplies[0]).toMatchObject({ type: "ack", seq: 0, accepted: events.length - 9, refused: 9 });
    expect((jsonReplies[0] as { truncated: number }).truncated).toBeGreaterThan(10);
    expect(jsonReplies.slice(1).map((r) => (r as { truncated: number }).truncated)).toEqual([1, 1, 1, 0]);
    expect(binaryReplies).toEqual(jsonReplies);
    expect(binaryEvents.length).toBe(jsonEvents.length);
    for (let i = 0; i < jsonEvents.length; i++) expect(binaryEvents[i]).toEqual(jsonEvents[i]!);
    // toEqual treats -0 and 0 alike only sometimes: the exact values must match too.
    expect(binaryEvents.map((e) => Object.is(e.timing_send, -0))).toEqual(jsonEvents.map((e) => Object.is(e.timing_send, -0)));
    expect(binaryEvents.map((e) => Object.is(e.timing_wait, -0))).toEqual(jsonEvents.map((e) => Object.is(e.timing_wait, -0)));
    const unicode = binaryEvents.find((e) => e.service === "sérvice 😀")!;
    expect([unicode.http_req_path, unicode.http_req_headers[0]![1], unicode.tags["ключ"]]).toEqual(["/a\ud800b", "🎉\udfff", "\ud83d"]);
    const cut = binaryEvents.find((e) => e.http_req_path.length === publishLimits.maxPathChars && e.http_req_path.startsWith("yyy"))!;
    expect(cut.http_req_path.endsWith(TRUNCATION_MARKER)).toBe(true);
  });

  test("an event kept from a batch does not keep the batch's other strings alive", () => {
    const now = Date.now() * 1000;
    const events = generateEvents({ count: 1000, startMicros: now - 1e6, endMicros: now, seed: 5 });
    const frame = encodeEventBatch(1, events);
    const heap = () => {
      Bun.gc(true);
      const stats = heapStats();
      return stats.heapSize + stats.extraMemorySize;
    };
    const kept: TracedEvent[] = [];
    const before = heap();
    // Each batch's string table is about 600 KB: sixty of them held by one event each would be about 36 MB.
    for (let i = 0; i < 60; i++) {
      const { ingest, delivered } = ingestWithSink();
      ingest.handle(target, frame);
      kept.push(delivered[i]!);
    }
    expect(heap() - before).toBeLessThan(12 * 1024 * 1024);
    expect(kept.map((e) => e.event_id)).toEqual(events.slice(0, 60).map((e) => e.event_id));
  });

  test("a frame from another agent version: unknown columns and kinds are skipped, missing ones are neutral", () => {
    const event = tracedEvent({ http_req_path: "/kept", service: "svc" });
    const frame = rewriteHeader(encodeEventBatch(2, [event]), (header) => {
      for (const column of header.columns) {
        if (column[0] === "service") column[0] = "service_v9";
        if (column[0] === "http_req_method") column[1] = "zstd-strings";
      }
    });
    const { ingest, delivered } = ingestWithSink();
    expect(ingest.handle(target, frame)).toMatchObject({ type: "ack", seq: 2, accepted: 1 });
    expect(delivered).toEqual([withSearch({ ...event, service: "", http_req_method: "" })]);
  });

  test("broken frames get a malformed error with the reason, or too_many_events", () => {
    const { ingest, delivered } = ingestWithSink();
    const frame = encodeEventBatch(8, [tracedEvent()]);
    const replies = [
      ingest.handle(target, frame.subarray(0, frame.length >> 1)),
      ingest.handle(target, new Uint8Array([0x89, 0x54, 0x53, 0x42, 2, 0, 0, 0, 0, 0, 0, 0])),
      ingest.handle(
        target,
        rewriteHeader(frame, (h) => (h.columns.find((c) => c[0] === "service")![1] = "f64")),
      ),
      ingest.handle(
        target,
        rewriteHeader(frame, (h) => (h.count = 1001)),
      ),
      ingest.handle(
        target,
        rewriteHeader(frame, (h) => (h.strings[0] = (h.strings[0] as number) + 40)),
      ),
    ];
    expect(replies.map((r) => [r.type, (r as { code?: string }).code])).toEqual([
      ["error", "malformed"],
      ["error", "malformed"],
      ["error", "malformed"],
      ["error", "too_many_events"],
      ["error", "malformed"],
    ]);
    expect((replies[1] as { message: string }).message).toContain("version 2");
    expect(replies[2]).toMatchObject({ seq: 8, message: expect.stringContaining("column service") });
    expect(delivered).toEqual([]);
    expect(ingest.handle(target, frame)).toMatchObject({ type: "ack", accepted: 1 });
  });

  test("a small frame cannot expand into far more than it carries: refused as too large", () => {
    // One 1000-character tag value, de-duplicated: 64 tags x 1000 events name it, 64 MB written out (as JSON,
    // a 64 MB message the server would refuse as too large).
    const value = "v".repeat(1000);
    const tags = Object.fromEntries(Array.from({ length: 64 }, (_, i) => [`t${i}`, value]));
    const events = Array.from({ length: 1000 }, () => tracedEvent({ tags }));
    const frame = encodeEventBatch(4, events);
    expect(frame.length).toBeLessThan(publishLimits.maxMessageBytes);
    const { ingest, delivered } = ingestWithSink();
    expect(ingest.handle(target, frame)).toMatchObject({ type: "error", code: "too_large", seq: 4 });
    expect(delivered).toEqual([]);
    // Fewer of the same events per batch are accepted.
    expect(ingest.handle(target, encodeEventBatch(5, events.slice(0, 200)))).toMatchObject({ type: "ack", accepted: 200 });
  });

  test("fuzz: mutated and random frames never throw, always get an ack or an error", () => {
    const { ingest, delivered } = ingestWithSink();
    const now = Date.now() * 1000;
    const events = generateEvents({ count: 20, startMicros: now - 1e6, endMicros: now, seed: 3 }).map((e, i) =>
      i % 2 ? { ...e, http_req_body: bytes(`body ${i}`) } : e,
    );
    const valid = encodeEventBatch(1, events);
    const rnd = rng(99);
    let acks = 0;
    for (let round = 0; round < 3000; round++) {
      const frame = mutate(valid, rnd);
      let reply: PublishServerMessage | undefined;
      expect(() => (reply = ingest.handle(target, frame))).not.toThrow();
      expect(["ack", "error"]).toContain(reply!.type);
      if (reply!.type === "ack") acks++;
    }
    expect(acks).toBeGreaterThan(100);
    for (const e of delivered) {
      expect(e.event_id).toMatch(/^[0-9a-f-]{36}$/);
      expect(Number.isFinite(e.time) && e.time > 0).toBe(true);
      expect(typeof e.http_req_path).toBe("string");
      expect(e.http_req_path.length).toBeLessThanOrEqual(publishLimits.maxPathChars);
      expect(e.http_req_headers.every(([n, v]) => typeof n === "string" && typeof v === "string")).toBe(true);
      expect(e.http_req_body).toMatch(/^[A-Za-z0-9+/]*={0,2}$/);
    }
  });
});

type Header = { seq: number; count: number; strings: unknown[]; columns: Array<[string, string, number]> };

/** The same frame with its JSON header edited (sections copied as they are). */
function rewriteHeader(frame: Uint8Array, edit: (header: Header) => void): Uint8Array {
  const view = new DataView(frame.buffer, frame.byteOffset);
  const length = view.getUint32(8, true);
  const header = JSON.parse(new TextDecoder().decode(frame.subarray(12, 12 + length))) as Header;
  edit(header);
  const bytes = encoder.encode(JSON.stringify(header));
  const align8 = (n: number) => (n + 7) & ~7;
  const rest = frame.subarray(align8(12 + length));
  const out = new Uint8Array(align8(12 + bytes.length) + rest.length);
  out.set(frame.subarray(0, 8));
  new DataView(out.buffer).setUint32(8, bytes.length, true);
  out.set(bytes, 12);
  out.set(rest, align8(12 + bytes.length));
  return out;
}

/** A damaged copy: flipped bytes (header, tables, columns), a cut, random bytes, or an edited header. */
function mutate(valid: Uint8Array, rnd: () => number): Uint8Array {
  const r = rnd();
  if (r < 0.1) return valid.subarray(0, Math.floor(rnd() * valid.length));
  if (r < 0.2) {
    const out = new Uint8Array(Math.floor(rnd() * 200));
    for (let i = 0; i < out.length; i++) out[i] = Math.floor(rnd() * 256);
    out.set([0x89, 0x54, 0x53, 0x42, 1].slice(0, out.length));
    return out;
  }
  if (r < 0.35) {
    return rewriteHeader(valid, (h) => {
      const values: unknown[] = [-1, 0, 1, 2 ** 32, 1e300, "x", null, [], 0.5];
      const pick = values[Math.floor(rnd() * values.length)];
      const which = Math.floor(rnd() * 4);
      if (which === 0) h.count = pick as number;
      else if (which === 1) h.strings[Math.floor(rnd() * 3)] = pick;
      else if (which === 2) h.columns[Math.floor(rnd() * h.columns.length)]![2] = pick as number;
      else h.seq = pick as number;
    });
  }
  const out = new Uint8Array(valid);
  const flips = 1 + Math.floor(rnd() * 8);
  for (let i = 0; i < flips; i++) {
    // Bias towards the start (prefix, header, string lengths) where structure lives.
    const at = rnd() < 0.5 ? Math.floor(rnd() * Math.min(out.length, 2048)) : Math.floor(rnd() * out.length);
    out[at] = Math.floor(rnd() * 256);
  }
  return out;
}
