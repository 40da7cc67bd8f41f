/**
 * Content search on DuckDB, side by side in one run against the URL search it is measured by. Generated events over
 * 24 h with JSON bodies (a few hundred bytes each, an order id, items and a note) and a request id header; one event in
 * 10,000 holds the order `zebra-7781` in its request body and the id `rid-5521` in its header. Each case is the
 * explorer's query pair (the histogram and the first page of rows, run together) over the whole 24 h:
 *   - baseline: `request.url contains "/users/"`;
 *   - a selective body search: `request.body contains "zebra-7781"`;
 *   - a header equality: `request.headers["x-request-id"] == "rid-5521"`;
 *   - the search box's condition for the same order (bodies and headers, any case).
 * Then what the search columns cost at ingest: the same events inserted into three stores, one with the search columns
 * made as the server's ingest makes them (SearchTexts.fill, timed with the insert; a text body stored once, ADR 0032),
 * one the same but with each body stored twice as before that (its base64 and its search text: each filled event is
 * copied before its insert, so the store does not know the copy's text is its body), one with them left empty (what
 * an event stored before content search held); throughput of each and the database file's bytes per event.
 *
 *   bun bench/search/run.ts [--events 1000000] [--runs 5]
 *   --smoke: 20,000 events, 2 runs (proves it runs, measures nothing).
 */
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { FilterExpr } from "~/lib/filter/ast.ts";
import { parseFilter } from "~/lib/filter/parse.ts";
import { searchCondition } from "~/lib/filter/search.ts";
import type { TracedEvent } from "~/lib/protocol/event.ts";
import { listColumns, type QueryFilter } from "~/lib/protocol/query.ts";
import { openDuckDbStore } from "~/store/duckdb.ts";
import { SearchTexts } from "~/store/search-text.ts";
import type { SqlEventStore } from "~/store/sql-store.ts";
import { generateEvents } from "../../tests/store/generate.ts";
import { isSmoke, optionOf } from "../options.ts";

const option = optionOf(process.argv.slice(2));
const total = Number(option("events", "1000000", "20000"));
const runs = Number(option("runs", "5", "2"));
const hourMs = 3_600_000;
const endMs = Date.UTC(2026, 0, 11);
const startMs = endMs - 24 * hourMs;
const whole = { lowerMs: startMs, upperMs: endMs };

const words = ["blue", "large", "gift", "express", "fragile", "return", "priority", "sample", "backorder", "promo"];
function jsonBody(i: number, isNeedle: boolean): string {
  const items = Array.from({ length: 1 + (i % 4) }, (_, k) => ({ sku: `sku-${(i * 7 + k * 13) % 9973}`, qty: 1 + ((i + k) % 3) }));
  return JSON.stringify({
    id: i,
    order: isNeedle ? "zebra-7781" : `ord-${(i * 2654435761) % 1_000_003}`,
    customer: { name: `Customer ${i % 5000}`, email: `c${i % 5000}@example.com` },
    items,
    note: `${words[i % words.length]} ${words[(i >> 3) % words.length]} delivery café`,
  });
}

/** The events, each with a JSON body each way and a request id header; every 10,000th carries the needles. */
function makeEvents(count: number, seed: number): TracedEvent[] {
  const events = generateEvents({ count, startMicros: startMs * 1000, endMicros: endMs * 1000, seed });
  events.forEach((e, i) => {
    const isNeedle = i % 10_000 === 5_000;
    const req = jsonBody(i, isNeedle);
    const resp = JSON.stringify({ ok: true, order: JSON.parse(req).order, total: (i % 900) + 0.99 });
    e.http_req_body = Buffer.from(req).toString("base64");
    e.http_req_content_type = "application/json";
    e.http_req_body_truncated = false;
    e.http_resp_body = Buffer.from(resp).toString("base64");
    e.http_resp_content_type = "application/json";
    e.http_resp_body_truncated = false;
    e.http_req_headers = [...e.http_req_headers, ["X-Request-Id", isNeedle ? "rid-5521" : `req-${i}`]];
  });
  return events;
}

function parsed(text: string): FilterExpr[] {
  const r = parseFilter(text);
  if (!r.ok) throw new Error(`${text}: ${r.error.message}`);
  return [r.expr];
}

const search = searchCondition("zebra-7781");
if (!search.ok) throw new Error(search.message);
const cases = [
  { name: 'request.url contains "/users/" (baseline)', filter: 'request.url contains "/users/"' },
  { name: 'request.body contains "zebra-7781"', filter: 'request.body contains "zebra-7781"' },
  { name: 'request.headers["x-request-id"] == "rid-5521"', filter: 'request.headers["x-request-id"] == "rid-5521"' },
  { name: 'search box "zebra-7781"', filter: search.condition },
];

async function timed(fn: () => Promise<unknown>): Promise<number> {
  await fn();
  const xs: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t = performance.now();
    await fn();
    xs.push(performance.now() - t);
  }
  xs.sort((a, b) => a - b);
  return xs[Math.floor(xs.length / 2)]!;
}

/**
 * Inserts `events` in the store's batches; with `texts`, the search columns are made first, inside the timing, and with
 * `isTwice` each event is then copied (its bodies stored twice).
 */
async function ingest(
  store: SqlEventStore,
  ns: string,
  events: TracedEvent[],
  texts: SearchTexts | null,
  isTwice = false,
): Promise<number> {
  const size = store.insertBatchSize;
  const t = performance.now();
  for (let i = 0; i < events.length; i += size) {
    let batch = events.slice(i, i + size);
    if (texts) for (const e of batch) texts.fill(e);
    if (isTwice) batch = batch.map((e) => ({ ...e }));
    await store.insert(ns, batch);
  }
  return events.length / ((performance.now() - t) / 1000);
}

const unlimitedTexts = () => new SearchTexts(performance.now.bind(performance), { ratePerSecond: 1e9, burst: 1e9 });

const dir = mkdtempSync(join(tmpdir(), "tapscope-bench-search-"));
try {
  console.log(`== duckdb: ${total.toLocaleString("en")} events over 24 h, JSON bodies; the needles in 1 of 10,000`);
  const events = makeEvents(total, 41);

  // Ingest: the same events into three stores, in an order that puts each store's halves at both ends of the run, so
  // machine noise hits them alike.
  const withPath = join(dir, "with.duckdb");
  const twicePath = join(dir, "twice.duckdb");
  const withoutPath = join(dir, "without.duckdb");
  // A benchmark measures however long a query takes: the server's query timeout is not what is measured.
  const limits = { queryTimeoutMs: 600_000 };
  const withStore = await openDuckDbStore({ path: withPath, limits });
  const twiceStore = await openDuckDbStore({ path: twicePath, limits });
  const withoutStore = await openDuckDbStore({ path: withoutPath, limits });
  const ns = randomUUID();
  const half = Math.floor(total / 2);
  const twiceCopies = events.map((e) => ({ ...e }));
  const copies = events.map((e) => ({ ...e }));
  const withRate = [await ingest(withStore, ns, events.slice(0, half), unlimitedTexts())];
  const twiceRate = [await ingest(twiceStore, ns, twiceCopies.slice(0, half), unlimitedTexts(), true)];
  const withoutRate = [await ingest(withoutStore, ns, copies.slice(0, half), null)];
  withoutRate.push(await ingest(withoutStore, ns, copies.slice(half), null));
  twiceRate.push(await ingest(twiceStore, ns, twiceCopies.slice(half), unlimitedTexts(), true));
  withRate.push(await ingest(withStore, ns, events.slice(half), unlimitedTexts()));
  await twiceStore.close();
  // Making the search columns alone (the events stored without them, filled now): what of the ingest difference is
  // the server's making them, and what the store's writing them.
  const fillStarted = performance.now();
  const filler = unlimitedTexts();
  for (const e of copies) filler.fill(e);
  const fillMicros = ((performance.now() - fillStarted) * 1000) / total;
  const rate = (xs: number[]) => 2 / (1 / xs[0]! + 1 / xs[1]!);

  // The explorer's pair over the whole range on the store with the search columns.
  const rows: Array<{ name: string; both: number; hist: number; page: number; found: number }> = [];
  for (const c of cases) {
    const filter: QueryFilter = { clauses: [], global: whole, focus: null };
    const expressions = parsed(c.filter);
    const hist = () => withStore.histogram(ns, { filter, expressions });
    const page = () => withStore.queryRows(ns, { filter, expressions, columns: [...listColumns] });
    const h = await timed(hist);
    const p = await timed(page);
    const both = await timed(() => Promise.all([hist(), page()]));
    rows.push({ name: c.name, both, hist: h, page: p, found: (await page()).actualNumberOfRows });
  }
  await withStore.close();
  await withoutStore.close();
  const bytesWith = statSync(withPath).size;
  const bytesWithout = statSync(withoutPath).size;
  const bytesTwice = statSync(twicePath).size;

  const base = rows[0]!.both;
  console.log("\n| case (whole 24 h, histogram + first page) | found | histogram (ms) | page (ms) | both (ms) | / baseline |");
  console.log("|---|---|---|---|---|---|");
  for (const r of rows) {
    console.log(
      `| ${r.name} | ${r.found.toLocaleString("en")} | ${r.hist.toFixed(1)} | ${r.page.toFixed(1)} | **${r.both.toFixed(1)}** | ${(r.both / base).toFixed(2)}x |`,
    );
  }
  const inWith = rate(withRate);
  const inWithout = rate(withoutRate);
  console.log(
    `\ningest duckdb: ${Math.round(inWith)} events/s with the search columns made, ${Math.round(inWithout)} events/s without (with/without ${(inWith / inWithout).toFixed(2)})`,
  );
  const inTwice = rate(twiceRate);
  console.log(
    `ingest duckdb, each body stored twice (base64 and search text): ${Math.round(inTwice)} events/s (twice/without ${(inTwice / inWithout).toFixed(2)}, once/twice ${(inWith / inTwice).toFixed(2)})`,
  );
  console.log(
    `per event: ${(1e6 / inWith).toFixed(1)} µs with, ${(1e6 / inWithout).toFixed(1)} µs without; making the search columns alone ${fillMicros.toFixed(1)} µs, so the store's writing of them ${(1e6 / inWith - 1e6 / inWithout - fillMicros).toFixed(1)} µs`,
  );
  console.log(
    `stored bytes per event: ${Math.round(bytesWith / total)} with the search columns, ${Math.round(bytesWithout / total)} without (${(bytesWith / bytesWithout).toFixed(2)}x)`,
  );
  console.log(
    `stored bytes per event, each body stored twice: ${Math.round(bytesTwice / total)} (${(bytesTwice / bytesWithout).toFixed(2)}x)`,
  );
  const load = await Bun.file("/proc/loadavg")
    .text()
    .catch(() => "?");
  console.log(
    `load average during the run: ${load.split(" ").slice(0, 3).join(" ")}${isSmoke ? " (smoke: the figures mean nothing)" : ""}`,
  );
} finally {
  rmSync(dir, { recursive: true, force: true });
}
