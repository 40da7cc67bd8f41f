import { expect, test } from "bun:test";
import { randomUUID } from "node:crypto";
import type { TracedEvent } from "~/lib/protocol/event.ts";
import type { QueryBase } from "~/lib/protocol/query.ts";
import { minuteMicros, rollupTable, rollupView } from "~/store/sql/endpoint-rollup.ts";
import type { SqlEventStore } from "~/store/sql-store.ts";
import { tableName } from "~/store/table.ts";
import { generateEvents } from "./generate.ts";
import { endpointKeyOf, referenceEndpoints } from "./reference.ts";

/**
 * ClickHouse's per-minute Endpoints rollup, on one server or a cluster: which minutes the Endpoints table takes from
 * it, and that it holds each stored event exactly once through backfill, retention and a namespace's deletion.
 */
export type RollupTarget = {
  name: string;
  open: () => Promise<SqlEventStore>;
  /** Runs SQL on a server (the first node of a cluster); with insert_distributed_sync for inserts through a Distributed table. */
  sql: (query: string) => Promise<string>;
  /** Each server's SQL, to see that every node's tables are gone. */
  sqlEach: Array<(query: string) => Promise<string>>;
  /** " ON CLUSTER name" on a cluster, "" on one server. */
  onCluster: string;
  isCluster: boolean;
};

const hourMs = 3_600_000;
const endMs = Date.UTC(2026, 0, 12, 12, 0, 0);
const startMs = endMs - 2 * hourMs;

/** Per minute and protocol, how many events the rollup holds, read with its own -Merge. */
async function rolledUp(target: RollupTarget, ns: string): Promise<Map<string, number>> {
  const text = await target.sql(
    `SELECT minute, protocol, countMerge(n) FROM ${rollupTable(tableName(ns))} GROUP BY minute, protocol FORMAT TabSeparated`,
  );
  const out = new Map<string, number>();
  for (const line of text.split("\n").filter(Boolean)) {
    const [minute, protocol, n] = line.split("\t");
    out.set(`${minute} ${protocol}`, Number(n));
  }
  return out;
}

function perMinute(events: readonly TracedEvent[]): Map<string, number> {
  const out = new Map<string, number>();
  for (const e of events) {
    const key = `${Math.floor(e.time / minuteMicros) * minuteMicros} ${e.protocol}`;
    out.set(key, (out.get(key) ?? 0) + 1);
  }
  return out;
}

/** `count` requests of one made-up endpoint in the minute starting at `minute`, written to the rollup alone (no event has them). */
function plantSql(ns: string, minute: number, count: number): string {
  return (
    `INSERT INTO ${rollupTable(tableName(ns))} SELECT toInt64(${minute}) AS minute, 'http' AS protocol, 'planted' AS service, ` +
    "toUInt8(0) AS o, '' AS host, 'GET' AS method, '/planted' AS route, countState() AS n, sumState(toUInt64(0)) AS e4, " +
    "sumState(toUInt64(0)) AS e5, quantilesTDigestState(0.5, 0.95, 0.99)(toInt64(1000)) AS q, maxState(toInt64(1000)) AS mx, " +
    `sumState(toInt64(0)) AS bin, sumState(toInt64(0)) AS bout FROM numbers(${count}) GROUP BY minute`
  );
}

export function testEndpointRollup(target: RollupTarget): void {
  test(`${target.name}: the Endpoints table and the explorer's counts take a range's whole minutes from the rollup and its cut minutes from the events; a filter or a rank reads the events`, async () => {
    const store = await target.open();
    const ns = randomUUID();
    const events = generateEvents({ count: 600, startMicros: startMs * 1000, endMicros: endMs * 1000, seed: 31 });
    try {
      await store.insert(ns, events);
      const range = { lowerMs: startMs + 10 * 60_000 + 30_000, upperMs: endMs - 5 * 60_000 };
      const whole = (startMs + 40 * 60_000) * 1000;
      const cut = (startMs + 10 * 60_000) * 1000;
      // Requests no event has: three in a whole minute of the range, five in the minute its start cuts.
      await target.sql(plantSql(ns, whole, 3));
      await target.sql(plantSql(ns, cut, 5));
      const query: QueryBase = { filter: { clauses: [], global: range } };
      const r = await store.endpoints(ns, { ...query, sparklinePoints: 10 });
      const planted = r.rows.find((x) => x.service === "planted");
      expect(planted?.requests).toBe(3);
      // The minute at 40 min is in the third of ten points of 10.45 min from 10.5 min.
      expect(planted?.sparkline.map((v) => v !== null)).toEqual([false, false, true, false, false, false, false, false, false, false]);
      const real = [...referenceEndpoints(events, query, range).values()].reduce((s, l) => s + l.length, 0);
      expect((await store.endpoints(ns, { ...query, isWhole: true })).rows[0]!.requests).toBe(real + 3);
      // The explorer's unfiltered counts too: its histogram's and its first page's total.
      const inRange = events.filter((e) => e.time >= range.lowerMs * 1000 && e.time < range.upperMs * 1000).length;
      expect((await store.histogram(ns, query)).total).toBe(inRange + 3);
      expect((await store.queryRows(ns, { ...query, limit: 10 })).actualNumberOfRows).toBe(inRange + 3);
      const errorsOnly: QueryBase = {
        ...query,
        expressions: [{ kind: "compare", field: "response.status", op: ">=", value: 400, pos: 0 }] as QueryBase["expressions"],
      };
      expect((await store.histogram(ns, errorsOnly)).total).toBe(
        events.filter((e) => e.time >= range.lowerMs * 1000 && e.time < range.upperMs * 1000 && e.http_resp_status_code >= 400).length,
      );
      // What the rollup cannot answer reads the events themselves.
      const filtered = await store.endpoints(ns, {
        ...query,
        expressions: [{ kind: "compare", field: "service", op: "!=", value: "nobody", pos: 0 }] as QueryBase["expressions"],
      });
      expect(filtered.rows.some((x) => x.service === "planted")).toBe(false);
      expect(filtered.rows.reduce((s, x) => s + x.requests, 0)).toBe(real);
      const ranked = await store.endpoints(ns, { ...query, rankOfMicros: 20_000 });
      expect(ranked.rows.some((x) => x.service === "planted")).toBe(false);
      // A range without a whole minute reads the events.
      const short = await store.endpoints(ns, {
        filter: { clauses: [], global: { lowerMs: whole / 1000 + 1, upperMs: whole / 1000 + 59_000 } },
      });
      expect(short.rows.some((x) => x.service === "planted")).toBe(false);
    } finally {
      await store.dropNamespace(ns);
      await store.close();
    }
  }, 120_000);

  test(`${target.name}: the rollup holds every stored event once: on insert, backfilled once into a table made before it, after a retention cutoff inside a minute; a deleted namespace leaves none of it`, async () => {
    const ns = randomUUID();
    const table = tableName(ns);
    const first = generateEvents({ count: 800, startMicros: startMs * 1000, endMicros: endMs * 1000, seed: 32 });
    let store = await target.open();
    try {
      await store.insert(ns, first);
      expect(await rolledUp(target, ns)).toEqual(perMinute(first));
      // As a server from before the rollup left it: the events alone.
      await target.sql(`DROP TABLE ${rollupView(table)}${target.onCluster}`);
      await target.sql(`DROP TABLE ${rollupTable(table)}${target.onCluster}`);
      if (target.isCluster) await target.sql(`DROP TABLE ${rollupTable(table)}_local${target.onCluster}`);
      await store.close();
      store = await target.open();
      const all = { lowerMs: startMs, upperMs: endMs };
      const q: QueryBase = { filter: { clauses: [], global: all } };
      const reopened = await store.endpoints(ns, q);
      expect(await rolledUp(target, ns)).toEqual(perMinute(first));
      expect(
        new Map(
          reopened.rows.map((x) => [
            endpointKeyOf({ ...x, http_is_outgoing: x.isOutgoing, http_req_host: x.host, http_req_method: x.method, http_route: x.route }),
            x.requests,
          ]),
        ),
      ).toEqual(new Map([...referenceEndpoints(first, q, all)].map(([k, v]) => [k, v.length])));
      // Stored after it: counted once, by the view.
      const second = generateEvents({ count: 300, startMicros: startMs * 1000, endMicros: endMs * 1000, seed: 33 });
      await store.insert(ns, second);
      const both = [...first, ...second];
      expect(await rolledUp(target, ns)).toEqual(perMinute(both));
      // A cutoff 20.5 s into a minute that has events each side of it.
      const isIn = (from: number, to: number) => both.some((e) => e.time >= from && e.time < to);
      const minute = [...new Set(both.map((e) => Math.floor(e.time / minuteMicros) * minuteMicros))]
        .sort((a, b) => a - b)
        .find((m) => isIn(m, m + 20_500_000) && isIn(m + 20_500_000, m + minuteMicros))!;
      const cutoff = minute + 20_500_000;
      await store.deleteOlderThan(ns, cutoff);
      const kept = both.filter((e) => e.time >= cutoff);
      expect(await rolledUp(target, ns)).toEqual(perMinute(kept));
      const after = await store.endpoints(ns, { ...q, isWhole: true });
      expect(after.rows[0]!.requests).toBe(kept.filter((e) => e.protocol === "http").length);
      await store.dropNamespace(ns);
      for (const sql of target.sqlEach) {
        expect(await sql(`SELECT name FROM system.tables WHERE database = currentDatabase() AND name LIKE '${table}%'`)).toBe("");
      }
    } finally {
      await store.dropNamespace(ns).catch(() => undefined);
      await store.close();
    }
  }, 180_000);
}
