import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { randomUUID } from "node:crypto";
import type { TracedEvent } from "~/lib/protocol/event.ts";
import { openClickHouseStore } from "~/store/clickhouse.ts";
import { openDuckDbStore } from "~/store/duckdb.ts";
import { searchColumns } from "~/store/search-text.ts";
import type { SqlEventStore } from "~/store/sql-store.ts";
import { eventLayout, eventsOfRows, sliceRows, toEventRows } from "~/store/table.ts";
import { clickhouseUrl } from "../support/clickhouse.ts";
import { generateEvents } from "./generate.ts";

/** The stored columns as [name, stored type]. */
const eventColumns = eventLayout.columns.map((c) => [c.name as keyof TracedEvent, c.type] as const);

/**
 * Each engine's insert encodes a batch its own way: DuckDB gets each column as its values joined by U+001F
 * and splits them again; ClickHouse gets TabSeparated text. These are the values that could break either:
 * the separators and escapes themselves, text that ends or starts with them, empty text, long text,
 * unpaired surrogates and extreme numbers.
 */
const startMicros = Date.UTC(2026, 0, 10) * 1000;
const base = generateEvents({ count: 40, startMicros, endMicros: startMicros + 3_600_000_000, seed: 11 });

const awkward = [
  "\x1f",
  "\x1f\x1f",
  "a\x1fb",
  "\x1e",
  "\x1e\x1f",
  "tail\x1e",
  "\x1fhead",
  "\x1e\x1f\x1f\x1e",
  "",
  "\0",
  "a\0b\0",
  "line\nbreak\r\n",
  "\"quoted\" 'single' \\back\\slash\\",
  "\\t\\n\\0 \t\ttabs\\",
  ",",
  "1,2",
  "日本語 😀 𝔘𝔫𝔦𝔠𝔬𝔡𝔢",
  "\u202e\x7f\u0001",
  "x".repeat(1_000_000),
];

/** The event id stays a UUID: the events are looked up by it. */
const stringColumns = eventColumns.filter(([name, kind]) => kind === "string" && name !== "event_id").map(([name]) => name);

function withText(e: TracedEvent, i: number): TracedEvent {
  const out: Record<string, unknown> = { ...e };
  // Every string column of the event gets an awkward value (shifted per column, so rows differ).
  stringColumns.forEach((name, j) => {
    out[name] = awkward[(i + j) % awkward.length];
  });
  out.http_req_headers = [[awkward[i % awkward.length], awkward[(i + 1) % awkward.length]]];
  out.http_resp_headers = [];
  out.tags = { [awkward[(i + 2) % awkward.length] as string]: awkward[(i + 3) % awkward.length] };
  return out as TracedEvent;
}

/**
 * An event as a whole-event read gives it back: without the search texts, which only filters read (their text goes
 * through the same encoding as every other string column above).
 */
function asRead(e: TracedEvent): TracedEvent {
  const out: Record<string, unknown> = { ...e };
  for (const name of searchColumns) out[name] = "";
  return out as TracedEvent;
}

const engines: Array<[string, () => Promise<SqlEventStore>]> = [
  ["DuckDB", () => openDuckDbStore({ path: ":memory:" })],
  ["ClickHouse", async () => openClickHouseStore({ url: await clickhouseUrl() })],
];

describe.each(engines)("%s insert encoding", (_name, open) => {
  let store: SqlEventStore;
  beforeAll(async () => {
    store = await open();
  });
  afterAll(async () => {
    await store.close();
  });

  async function roundTrip(events: TracedEvent[]): Promise<void> {
    const ns = randomUUID();
    await store.insert(ns, events);
    for (const e of events) {
      const stored = await store.getEvent(ns, e.event_id);
      expect(stored?.event).toEqual(asRead(e));
    }
    await store.dropNamespace(ns);
  }

  test("separators, empty, NUL, quotes, newlines, astral and very long text round-trip exactly", async () => {
    await roundTrip(base.map(withText));
  }, 30_000);

  test("a batch of one event whose text is all separators round-trips", async () => {
    const e = withText(base[0] as TracedEvent, 0);
    for (const name of stringColumns) (e as Record<string, unknown>)[name] = "\x1f";
    await roundTrip([e]);
  });

  test("one insert of several chunks of rows (as the store sink holds them), the separator in a later chunk", async () => {
    const ns = randomUUID();
    const plain = base.slice(0, 10);
    const awkwardEvents = base.slice(10, 20).map(withText);
    const rows = toEventRows([...plain, ...awkwardEvents]);
    // Cut as the sink cuts a batch: a whole chunk, then the head of the next.
    await store.insertRows(ns, [sliceRows(rows, 0, 10), sliceRows(rows, 10, 15), sliceRows(rows, 15, 20), toEventRows([])]);
    for (const e of [...plain, ...awkwardEvents]) expect((await store.getEvent(ns, e.event_id))?.event).toEqual(asRead(e));
    expect(
      (await store.queryRows(ns, { filter: { clauses: [], global: { lowerMs: 0, upperMs: 4_000_000_000_000 } } })).actualNumberOfRows,
    ).toBe(20);
    await store.dropNamespace(ns);
  });

  test("repeated events (the same id and time) are each stored", async () => {
    const ns = randomUUID();
    const e = base[0] as TracedEvent;
    await store.insert(ns, [e, e, e]);
    expect(
      (await store.queryRows(ns, { filter: { clauses: [], global: { lowerMs: 0, upperMs: e.time / 1000 + 1 } } })).actualNumberOfRows,
    ).toBe(3);
    await store.dropNamespace(ns);
  });

  test("a batch of plain events round-trips (the common path)", async () => {
    await roundTrip(base);
  });

  test("-1, zero and the largest safe integers are kept; flags stay booleans", async () => {
    const ints = eventColumns.filter(([, kind]) => kind === "int").map(([name]) => name);
    const events = [-1, 0, Number.MAX_SAFE_INTEGER, Number.MIN_SAFE_INTEGER].map((n, i) => {
      const e: Record<string, unknown> = { ...(base[i] as TracedEvent) };
      for (const name of ints) if (name !== "time") e[name] = n;
      e.http_is_outgoing = i % 2 === 0;
      e.http_req_body_truncated = i % 2 === 1;
      return e as TracedEvent;
    });
    await roundTrip(events);
  });

  test("unpaired surrogates become U+FFFD in text columns and are kept in JSON columns (as before)", async () => {
    const ns = randomUUID();
    const e = {
      ...(base[0] as TracedEvent),
      http_req_path: "/a\ud800",
      service: "\udc00x",
      http_req_headers: [["h\ud800", "\udfff"]] as Array<[string, string]>,
    };
    await store.insert(ns, [e, { ...(base[1] as TracedEvent), service: "\x1f\ud800" }]);
    const stored = await store.getEvent(ns, e.event_id);
    expect(stored?.event.http_req_path).toBe("/a\ufffd");
    expect(stored?.event.service).toBe("\ufffdx");
    expect(stored?.event.http_req_headers).toEqual([["h\ud800", "\udfff"]]);
    expect((await store.getEvent(ns, (base[1] as TracedEvent).event_id))?.event.service).toBe("\x1f\ufffd");
    await store.dropNamespace(ns);
  });

  test("a batch the engine refuses fails as a whole, and the next batch of the namespace is stored", async () => {
    const ns = randomUUID();
    const bad = { ...(base[0] as TracedEvent), http_duration: 1e300 };
    await expect(store.insert(ns, [bad, base[1] as TracedEvent])).rejects.toThrow();
    await store.insert(ns, [base[2] as TracedEvent]);
    expect((await store.getEvent(ns, (base[1] as TracedEvent).event_id))?.event).toBeUndefined();
    expect((await store.getEvent(ns, (base[2] as TracedEvent).event_id))?.event).toEqual(asRead(base[2] as TracedEvent));
    await store.dropNamespace(ns);
  });

  test("a namespace dropped and written again gets a fresh table", async () => {
    const ns = randomUUID();
    await store.insert(ns, [base[0] as TracedEvent]);
    await store.dropNamespace(ns);
    await store.insert(ns, [base[1] as TracedEvent]);
    expect(await store.getEvent(ns, (base[0] as TracedEvent).event_id)).toBeNull();
    expect((await store.getEvent(ns, (base[1] as TracedEvent).event_id))?.event).toEqual(asRead(base[1] as TracedEvent));
    await store.dropNamespace(ns);
  });
});

describe("the stored form the store sink holds (toEventRows)", () => {
  test("is sorted oldest first and gives the same events back (what a remote worker's insert gets)", () => {
    const events = base.map(withText).reverse();
    const rows = toEventRows(events);
    expect(rows.count).toBe(events.length);
    expect(eventsOfRows([sliceRows(rows, 0, 7), sliceRows(rows, 7, rows.count)])).toEqual([...events].sort((a, b) => a.time - b.time));
  });

  test("each row's size is the text it adds to an insert", () => {
    const small = toEventRows(base.slice(0, 1));
    const big = toEventRows([{ ...(base[0] as TracedEvent), http_resp_body: "QUJD".repeat(50_000) }]);
    expect((big.sizes[0] as number) - (small.sizes[0] as number)).toBe(200_000 - (base[0] as TracedEvent).http_resp_body.length);
  });
});
