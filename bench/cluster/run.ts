/**
 * bench:cluster — one server node on one ClickHouse against two nodes on a 2-shard ClickHouse cluster (with ZooKeeper,
 * Redis as the broker), side by side in one run, everything from Debian's packages on this machine:
 *   1. ingest: the same publisher load (one publisher per node, as fast as acks come back), events/s stored and dropped;
 *   2. live: publisher on one node at --live-rate events/s, viewer on the other node (the single node: both on it);
 *      publish-to-viewer latency p50/p99;
 *   3. queries at --rows rows (made inside ClickHouse, sharded through the Distributed table): histogram and first
 *      page over 24 h through a query tunnel, median and p90 of --runs; the rows with every row column, then with the
 *      explorer's list columns (what the explorer asks for).
 *   bun bench/cluster/run.ts [--events 100000] [--live-rate 5000] [--live-seconds 10] [--rows 10000000] [--runs 7]
 *   --smoke: 2,000 events ingested once, 1 s of live at 500 events/s, 10,000 rows queried once (proves it runs, measures
 *   nothing).
 */
import { createPublisher } from "~/agent/publish.ts";
import { TunnelClient } from "~/agent/query-client.ts";
import type { LiveServerMessage } from "~/lib/protocol/live.ts";
import { listColumns, type RowsQuery } from "~/lib/protocol/query.ts";
import { tableName } from "~/store/table.ts";
import { startClickHouseServer } from "../../tests/support/clickhouse.ts";
import { startClickHouseCluster } from "../../tests/support/clickhouse-cluster.ts";
import { seedOrg, startRedis } from "../../tests/support/cluster.ts";
import { freePort } from "../../tests/support/ports.ts";
import { createTestDatabase } from "../../tests/support/postgres.ts";
import { sampleEvent } from "../../tests/support/publish-server.ts";
import { type ServerProcess, spawnServer } from "../../tests/support/server-process.ts";
import { isSmoke, optionOf } from "../options.ts";

const args = process.argv.slice(2);
const option = optionOf(args);
const events = Number(option("events", "100000", "2000"));
const liveRate = Number(option("live-rate", "5000", "500"));
const liveSeconds = Number(option("live-seconds", "10", "1"));
const rows = Number(option("rows", "10000000", "10000"));
const runs = Number(option("runs", "7", "1"));
/** Ingest runs per setup (the better is kept), after a warm-up of `warmUpEvents`. */
const ingestRounds = isSmoke ? 1 : 2;
const warmUpEvents = isSmoke ? 500 : 5000;
const secret = "bench-cluster-secret-0123456789abcdef";

type Setup = { name: string; nodes: ServerProcess[]; org: Awaited<ReturnType<typeof seedOrg>>; sql: (q: string) => Promise<string> };

const sqlAt = (url: string) => async (query: string) => {
  const res = await fetch(url, { method: "POST", body: query, headers: { connection: "close" } });
  const text = await res.text();
  if (!res.ok) throw new Error(text);
  return text.trim();
};

async function setUp(): Promise<{ single: Setup; cluster: Setup; stop: () => Promise<void> }> {
  const [chSingle, chCluster, redis, db1, db2] = await Promise.all([
    startClickHouseServer(),
    startClickHouseCluster(),
    startRedis(),
    createTestDatabase(),
    createTestDatabase(),
  ]);
  const env = { SESSION_SECRET: secret, LOG_LEVEL: "warn", MEMORY_LIMIT: "1GiB" };
  const singleOrg = await seedOrg(db1, "single");
  const clusterOrg = await seedOrg(db2, "cluster");
  const singleNode = await spawnServer({ env: { ...env, DATABASE_URL: db1, CLICKHOUSE_URL: chSingle.url } });
  const clusterNodes: ServerProcess[] = [];
  for (const shard of chCluster.shards) {
    const port = await freePort();
    clusterNodes.push(
      await spawnServer({
        port,
        env: {
          ...env,
          DATABASE_URL: db2,
          CLICKHOUSE_URL: shard.url,
          CLICKHOUSE_CLUSTER: chCluster.name,
          ...(args.includes("--no-broker") ? {} : { BROKER_URL: redis.brokerUrl }),
        },
      }),
    );
  }
  return {
    single: { name: "1 node, 1 ClickHouse", nodes: [singleNode], org: singleOrg, sql: sqlAt(chSingle.url) },
    cluster: { name: "2 nodes, 2 shards", nodes: clusterNodes, org: clusterOrg, sql: sqlAt(chCluster.shards[0]!.url) },
    stop: async () => {
      for (const n of [singleNode, ...clusterNodes]) await n.kill();
      chSingle.stop();
      chCluster.stop();
      redis.stop();
    },
  };
}

/** One publisher per node of the setup, each sending its share as fast as the acks allow (queue kept under 20,000). */
async function ingest(setup: Setup, total: number): Promise<{ perSecond: number; dropped: number }> {
  const publishers = setup.nodes.map((n) => createPublisher({ endpoint: n.endpoint, token: setup.org.token, maxQueue: 50_000 }));
  await Promise.all(publishers.map((p) => p.join()));
  const share = Math.ceil(total / publishers.length);
  const started = performance.now();
  await Promise.all(
    publishers.map(async (p) => {
      let offered = 0;
      while (offered < share) {
        const s = p.stats();
        const done = s.sent + s.dropped + s.refused + s.rateLimited;
        const room = Math.min(share - offered, 20_000 - (offered - done));
        for (let i = 0; i < room; i++) p.send(sampleEvent({ time: Date.now() * 1000, event_id: crypto.randomUUID() }));
        offered += Math.max(0, room);
        p.flush();
        await Bun.sleep(room > 0 ? 0 : 5);
      }
    }),
  );
  const results = await Promise.all(publishers.map((p) => p.close(120_000)));
  const seconds = (performance.now() - started) / 1000;
  const sent = results.reduce((a, r) => a + r.sent, 0);
  return { perSecond: sent / seconds, dropped: results.reduce((a, r) => a + r.dropped + r.storeDropped + r.rateLimited, 0) };
}

/** Publisher on the first node at `rate` events/s, viewer on the last node: each event's latency from its send time. */
async function live(setup: Setup, rate: number, seconds: number): Promise<{ p50: number; p99: number; seen: number; sent: number }> {
  const viewer = new WebSocket(setup.org.liveUrl(setup.nodes.at(-1)!.endpoint, secret));
  const latencies: number[] = [];
  await new Promise<void>((resolve, reject) => {
    viewer.onopen = () => resolve();
    viewer.onerror = () => reject(new Error("live socket failed"));
  });
  let measuring = false;
  viewer.onmessage = (m) => {
    const message = JSON.parse(String(m.data)) as LiveServerMessage;
    if (measuring && message.type === "events") for (const e of message.events) latencies.push(Date.now() - e.time / 1000);
  };
  viewer.send(JSON.stringify({ type: "setConfig", revision: 1, filters: [] }));
  await Bun.sleep(500);
  measuring = true;
  const publisher = createPublisher({ endpoint: setup.nodes[0]!.endpoint, token: setup.org.token, batchIntervalMs: 10 });
  await publisher.join();
  const total = rate * seconds;
  const t0 = performance.now();
  let sent = 0;
  while (sent < total) {
    const due = Math.min(total, Math.floor(((performance.now() - t0) / 1000) * rate));
    for (; sent < due; sent++)
      publisher.send(sampleEvent({ time: Math.round((performance.timeOrigin + performance.now()) * 1000), event_id: crypto.randomUUID() }));
    await Bun.sleep(2);
  }
  await publisher.close(30_000);
  await Bun.sleep(500);
  viewer.close();
  latencies.sort((a, b) => a - b);
  const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? Number.NaN;
  return { p50: at(0.5), p99: at(0.99), seen: latencies.length, sent: total };
}

/** `n` synthetic events over the last 24 hours, made inside ClickHouse (through the Distributed table on the cluster). */
async function fill(setup: Setup, n: number, endMs: number): Promise<void> {
  const table = tableName(setup.org.namespaceId);
  const startUs = (endMs - 86_400_000) * 1000;
  await setup.sql(
    `INSERT INTO ${table} (time, event_id, service, protocol, http_req_method, http_req_path, http_resp_status_code, http_duration, http_req_host) ` +
      `SELECT ${startUs} + intDiv(number * 86400000000, ${n}), toString(generateUUIDv4()), 'api', 'http', ` +
      `arrayElement(['GET','POST','PUT','DELETE'], 1 + number % 4), concat('/items/', toString(number % 1000)), ` +
      `arrayElement([200, 200, 200, 201, 404, 500], 1 + number % 6), 1000 + number % 250000, 'bench.local' FROM numbers(${n})`,
  );
}

/**
 * The explorer's pair, `n` times. `columns`: the rows' columns, the explorer's list columns (what it asks for) or all
 * (none named: every row column).
 */
async function queries(
  setup: Setup,
  endMs: number,
  n: number,
  columns?: RowsQuery["columns"],
): Promise<{ median: number; p90: number; total: number }> {
  const client = await TunnelClient.open({ endpoint: setup.nodes[0]!.endpoint, token: setup.org.token, role: "SELECT", timeoutMs: 60_000 });
  const global = { lowerMs: endMs - 86_400_000, upperMs: endMs };
  const times: number[] = [];
  let total = 0;
  try {
    for (let i = 0; i < n; i++) {
      const t = performance.now();
      const [histogram] = await Promise.all([
        client.query({ kind: "histogram", query: { filter: { clauses: [], global } } }),
        client.query({ kind: "rows", query: { filter: { clauses: [], global }, ...(columns ? { columns } : {}) } }),
      ]);
      times.push(performance.now() - t);
      total = histogram.total ?? 0;
    }
  } finally {
    client.close();
  }
  times.sort((a, b) => a - b);
  return { median: times[Math.floor(times.length / 2)]!, p90: times[Math.min(times.length - 1, Math.floor(times.length * 0.9))]!, total };
}

const f = (x: number, digits = 0) => x.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits });
const { single, cluster, stop } = await setUp();
try {
  console.log(
    `bench:cluster — ${single.name} vs ${cluster.name}, load average ${(await Bun.file("/proc/loadavg").text()).split(" ").slice(0, 3).join(" ")}`,
  );
  // 1. Ingest, alternating twice; the better of each. "Watched": a viewer of the namespace on the second node, so every
  // event also crosses the broker (the fan-out's whole cost).
  const ingestRuns: Record<string, Array<{ perSecond: number; dropped: number }>> = { single: [], cluster: [], watched: [] };
  await ingest(single, warmUpEvents);
  await ingest(cluster, warmUpEvents);
  for (let round = 0; round < ingestRounds; round++) {
    ingestRuns.single!.push(await ingest(single, events));
    ingestRuns.cluster!.push(await ingest(cluster, events));
    const viewer = new WebSocket(cluster.org.liveUrl(cluster.nodes[1]!.endpoint, secret));
    await new Promise((resolve) => {
      viewer.onopen = resolve;
    });
    viewer.send(JSON.stringify({ type: "setConfig", revision: 1, filters: [] }));
    await Bun.sleep(1500);
    ingestRuns.watched!.push(await ingest(cluster, events));
    viewer.close();
  }
  const best = (xs: Array<{ perSecond: number; dropped: number }>) => xs.reduce((a, b) => (b.perSecond > a.perSecond ? b : a));
  const [is, ic, iw] = [best(ingestRuns.single!), best(ingestRuns.cluster!), best(ingestRuns.watched!)];
  console.log(`\ningest (${f(events)} events per run, best of ${ingestRounds})`);
  console.log(`  ${single.name.padEnd(30)} ${f(is.perSecond).padStart(8)} events/s stored, dropped ${is.dropped}`);
  console.log(`  ${cluster.name.padEnd(30)} ${f(ic.perSecond).padStart(8)} events/s stored, dropped ${ic.dropped}`);
  console.log(`  ${`${cluster.name}, watched on node 2`.padEnd(30)} ${f(iw.perSecond).padStart(8)} events/s stored, dropped ${iw.dropped}`);
  console.log(
    `  cluster / single: ${f(ic.perSecond / is.perSecond, 2)} (target >= 0.8); watched across nodes / single: ${f(iw.perSecond / is.perSecond, 2)}`,
  );

  if (args.includes("--ingest-only")) process.exit(0);
  // 2. Live.
  const ls = await live(single, liveRate, liveSeconds);
  const lc = await live(cluster, liveRate, liveSeconds);
  console.log(`\nlive at ${f(liveRate)} events/s for ${liveSeconds} s (publish to viewer)`);
  console.log(`  ${"same node (1 node)".padEnd(22)} p50 ${f(ls.p50, 1)} ms, p99 ${f(ls.p99, 1)} ms, seen ${f(ls.seen)} of ${f(ls.sent)}`);
  console.log(
    `  ${"across nodes".padEnd(22)} p50 ${f(lc.p50, 1)} ms, p99 ${f(lc.p99, 1)} ms, seen ${f(lc.seen)} of ${f(lc.sent)} (target p99 < 100 ms)`,
  );

  // 3. Queries at `rows` rows.
  const endMs = Math.ceil(Date.now() / 3_600_000) * 3_600_000 - 3_600_000;
  await fill(single, rows, endMs);
  await fill(cluster, rows, endMs);
  await queries(single, endMs, 1);
  await queries(cluster, endMs, 1);
  const qs = await queries(single, endMs, runs);
  const qc = await queries(cluster, endMs, runs);
  console.log(`\nhistogram + first page over 24 h (${runs} runs)`);
  console.log(`  ${single.name.padEnd(22)} median ${f(qs.median)} ms, p90 ${f(qs.p90)} ms over ${f(qs.total)} rows`);
  console.log(`  ${cluster.name.padEnd(22)} median ${f(qc.median)} ms, p90 ${f(qc.p90)} ms over ${f(qc.total)} rows (target < 1,000 ms)`);
  console.log(`  cluster / single: ${f(qc.median / qs.median, 2)}`);
  // The explorer asks for its list's columns, not every row column.
  const listed = [...listColumns] as RowsQuery["columns"];
  const qls = await queries(single, endMs, runs, listed);
  const qlc = await queries(cluster, endMs, runs, listed);
  console.log(`\nthe same, the rows with the explorer's list columns (what it asks for; ${runs} runs)`);
  console.log(`  ${single.name.padEnd(22)} median ${f(qls.median)} ms, p90 ${f(qls.p90)} ms over ${f(qls.total)} rows`);
  console.log(`  ${cluster.name.padEnd(22)} median ${f(qlc.median)} ms, p90 ${f(qlc.p90)} ms over ${f(qlc.total)} rows`);
} finally {
  await stop();
}
process.exit(0);
