import { expect, test } from "bun:test";
import { randomUUID } from "node:crypto";
import { createTableStatements, openClickHouseStore, supportsSkipIndexes } from "~/store/clickhouse.ts";
import { clickhouseLiteral } from "~/store/sql/escape.ts";
import { eventLayout, tableName } from "~/store/table.ts";
import { clickhouseUrl } from "../support/clickhouse.ts";
import { testAddedField } from "./added-field.ts";
import { runConformance } from "./conformance.ts";
import { testEndpointRollup } from "./endpoint-rollup.ts";
import { generateEvents } from "./generate.ts";

runConformance({
  name: "ClickHouse",
  open: async () => openClickHouseStore({ url: await clickhouseUrl() }),
  literalHex: async (bytes) => {
    const res = await fetch(await clickhouseUrl(), {
      method: "POST",
      body: `SELECT hex(${clickhouseLiteral(bytes)})`,
    });
    return (await res.text()).trim();
  },
});

test("ClickHouse: a table made before the TLS handshake column gets it when a server opens it; old rows read -1", async () => {
  const url = await clickhouseUrl();
  const ns = randomUUID();
  const end = 1_760_000_000_000_000;
  const old = generateEvents({ count: 5, startMicros: end - 3_600_000_000, endMicros: end, seed: 9 });
  const first = await openClickHouseStore({ url });
  await first.insert(ns, old);
  await first.close();
  const dropped = await fetch(url, { method: "POST", body: `ALTER TABLE ${tableName(ns)} DROP COLUMN timing_tls` });
  expect(dropped.status).toBe(200);
  const second = await openClickHouseStore({ url });
  const [before] = await second.getEvents(ns, [old[0]!.event_id]);
  expect(before!.timing_tls).toBe(-1);
  const fresh = { ...generateEvents({ count: 1, startMicros: end - 1000, endMicros: end, seed: 10 })[0]!, timing_tls: 777 };
  await second.insert(ns, [fresh]);
  const [after] = await second.getEvents(ns, [fresh.event_id]);
  expect(after!.timing_tls).toBe(777);
  await second.dropNamespace(ns);
  await second.close();
}, 60_000);

async function sqlAt(query: string): Promise<string> {
  const res = await fetch(await clickhouseUrl(), { method: "POST", body: query });
  const text = await res.text();
  if (!res.ok) throw new Error(text);
  return text.trim();
}

testEndpointRollup({
  name: "ClickHouse",
  open: async () => openClickHouseStore({ url: await clickhouseUrl() }),
  sql: sqlAt,
  sqlEach: [sqlAt],
  onCluster: "",
  isCluster: false,
});

testAddedField("ClickHouse", async (fields) => openClickHouseStore({ url: await clickhouseUrl(), fields }));

test("ClickHouse 20.1 and later: the search columns get skip indexes on the table that holds the rows; 18.16 gets none", () => {
  expect(supportsSkipIndexes("18.16.1")).toBe(false);
  expect(supportsSkipIndexes("19.17.4.11")).toBe(false);
  expect(supportsSkipIndexes("20.1.2.4")).toBe(true);
  expect(supportsSkipIndexes("24.8.1")).toBe(true);
  const [single] = createTableStatements("events_x", undefined, eventLayout, true);
  expect(single).toContain("INDEX search_req_body_ngrams search_req_body TYPE ngrambf_v1(4, 65536, 2, 0) GRANULARITY 1");
  expect(single).toContain("INDEX search_resp_headers_tokens search_resp_headers TYPE tokenbf_v1(32768, 3, 0) GRANULARITY 1");
  const [local, distributed] = createTableStatements("events_x", { name: "c", replicated: false }, eventLayout, true);
  expect(local).toContain("INDEX search_req_headers_tokens");
  expect(distributed).not.toContain("INDEX");
  expect(createTableStatements("events_x", undefined, eventLayout, false)[0]).not.toContain("INDEX");
});
