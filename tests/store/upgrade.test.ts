import { afterAll, describe, expect, test } from "bun:test";
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DuckDBInstance } from "@duckdb/node-api";
import type { TracedEvent } from "~/lib/protocol/event.ts";
import { openClickHouseStore } from "~/store/clickhouse.ts";
import { openDuckDbStore } from "~/store/duckdb.ts";
import { clickhouseLiteral, duckdbLiteral } from "~/store/sql/escape.ts";
import { eventColumns, tableName } from "~/store/table.ts";
import type { EventStore } from "~/store/types.ts";
import { clickhouseUrl } from "../support/clickhouse.ts";
import { tracedEvent } from "../support/event-factory.ts";

/** The columns of a table written before timing_tls existed. */
const oldColumns = eventColumns.filter(([name]) => name !== "timing_tls");
const time = 1_760_000_000_000_000;
const all = { lowerMs: time / 1000 - 60_000, upperMs: time / 1000 + 60_000 };

function oldRowValues(e: TracedEvent, literal: (v: string | number) => string): string {
  return oldColumns
    .map(([name, kind]) => {
      const v = e[name];
      if (kind === "json") return literal(JSON.stringify(v));
      if (kind === "flag") return v ? "1" : "0";
      return literal(v as string | number);
    })
    .join(", ");
}

const oldEvent = tracedEvent({ time, http_req_path: "/written-by-an-older-version", timing_connect: 700 });
const { timing_tls: _, ...oldEventFields } = oldEvent;
const newEvent = tracedEvent({
  time: time + 1,
  http_is_outgoing: true,
  http_req_host: "api.example.com",
  tls_server_name: "api.example.com",
  timing_connect: 900,
  timing_tls: 4_321,
  tags: { tls: "decrypted", tls_alpn: "h2" },
});

/** What a store opened over an old table must show: the old rows kept (no TLS time), new rows with theirs. */
async function expectUpgraded(store: EventStore, ns: string): Promise<void> {
  const before = await store.getEvent(ns, oldEvent.event_id);
  expect(before?.event).toEqual({ ...oldEventFields, timing_tls: -1 });
  await store.insert(ns, [newEvent]);
  const after = await store.queryRows(ns, { filter: { clauses: [], global: all } });
  expect(after.data.map((r) => r.event_id)).toEqual([newEvent.event_id, oldEvent.event_id]);
  expect((await store.getEvent(ns, newEvent.event_id))?.event).toEqual(newEvent);
  expect((await store.getEvent(ns, oldEvent.event_id))?.event.timing_connect).toBe(700);
}

describe("a store written by an older version (no timing_tls) is upgraded on open and keeps its rows", () => {
  const dirs: string[] = [];
  afterAll(() => {
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });

  test("DuckDB: the column is added to the file's tables, old rows read -1", async () => {
    const dir = mkdtempSync(join(tmpdir(), "tapscope-upgrade-"));
    dirs.push(dir);
    const path = join(dir, "events.duckdb");
    const ns = randomUUID();
    const table = tableName(ns);
    const types = { int: "BIGINT", flag: "UTINYINT", string: "VARCHAR", json: "VARCHAR" } as const;
    const instance = await DuckDBInstance.create(path);
    const conn = await instance.connect();
    await conn.run(`CREATE TABLE ${table} (${oldColumns.map(([name, kind]) => `${name} ${types[kind]} NOT NULL`).join(", ")})`);
    await conn.run(`INSERT INTO ${table} VALUES (${oldRowValues(oldEvent, duckdbLiteral)})`);
    conn.closeSync();
    instance.closeSync();

    const store = await openDuckDbStore({ path });
    try {
      await expectUpgraded(store, ns);
    } finally {
      await store.close();
    }
    // Opening again finds nothing to add and keeps both rows.
    const again = await openDuckDbStore({ path });
    expect(await again.countAll(ns)).toBe(2);
    await again.close();
  }, 30_000);

  test("ClickHouse: the column is added after timing_connect, old rows read -1", async () => {
    const url = await clickhouseUrl();
    const sql = async (query: string) => {
      const res = await fetch(url, { method: "POST", body: query });
      if (!res.ok) throw new Error(await res.text());
    };
    const ns = randomUUID();
    const table = tableName(ns);
    const types = { int: "Int64", flag: "UInt8", string: "String", json: "String" } as const;
    const cols = oldColumns.map(([name, kind]) => `${name} ${types[kind]}`);
    cols.splice(1, 0, "ts DateTime MATERIALIZED toDateTime(intDiv(time, 1000000))");
    await sql(`CREATE TABLE ${table} (${cols.join(", ")}) ENGINE = MergeTree PARTITION BY toDate(ts) ORDER BY time`);
    await sql(`INSERT INTO ${table} (${oldColumns.map(([n]) => n).join(", ")}) VALUES (${oldRowValues(oldEvent, clickhouseLiteral)})`);

    const store = await openClickHouseStore({ url });
    try {
      await expectUpgraded(store, ns);
      const res = await fetch(url, {
        method: "POST",
        body: `SELECT name FROM system.columns WHERE database = currentDatabase() AND table = '${table}' FORMAT TSV`,
      });
      const names = (await res.text()).trim().split("\n");
      expect(names.slice(names.indexOf("timing_connect"), names.indexOf("timing_connect") + 2)).toEqual(["timing_connect", "timing_tls"]);
    } finally {
      await store.dropNamespace(ns);
      await store.close();
    }
  }, 60_000);
});
