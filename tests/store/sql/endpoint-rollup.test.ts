import { expect, test } from "bun:test";
import { backfillSql, rollupEndpointsSql, rollupSparklineSql, rollupStatements, wholeMinutes } from "~/store/sql/endpoint-rollup.ts";
import { planEndpoints } from "~/store/sql/endpoints.ts";

const minute = 60_000_000;
const filter = (lowerMs: number, upperMs: number) => ({ clauses: [], global: { lowerMs, upperMs }, focus: null });

test("a range's whole minutes: from the first minute start at or after its start to the last at or before its end", () => {
  expect(wholeMinutes(0, 10 * minute)).toEqual({ first: 0, end: 10 * minute });
  expect(wholeMinutes(1, 10 * minute - 1)).toEqual({ first: minute, end: 9 * minute });
  expect(wholeMinutes(minute + 1, 2 * minute + 5)).toBeNull();
  expect(wholeMinutes(-90_000_000, 0)).toEqual({ first: -minute, end: 0 });
});

test("the rollup answers neither a rank nor a range without a whole minute, nor sparkline points shorter than a minute", () => {
  const day = { lowerMs: 1_700_000_000_000, upperMs: 1_700_086_400_000 };
  const plan = planEndpoints({ filter: filter(day.lowerMs, day.upperMs), sparklinePoints: 30 }, day);
  expect(rollupEndpointsSql("events_x", day, plan)).toContain("FROM events_x_rollup WHERE minute >= ");
  expect(rollupSparklineSql("events_x", day, plan, 100)).toContain("quantilesTDigestMerge(0.5, 0.95, 0.99)(q)[2]");
  const ranked = planEndpoints({ filter: filter(day.lowerMs, day.upperMs), rankOfMicros: 5 }, day);
  expect(rollupEndpointsSql("events_x", day, ranked)).toBeNull();
  const short = { lowerMs: day.lowerMs + 1_000, upperMs: day.lowerMs + 59_000 };
  expect(rollupEndpointsSql("events_x", short, planEndpoints({ filter: filter(short.lowerMs, short.upperMs) }, short))).toBeNull();
  const hour = { lowerMs: day.lowerMs, upperMs: day.lowerMs + 3_600_000 };
  // 30 points of an hour are two minutes each; 60 points of 10 minutes would be 10 s each.
  expect(
    rollupSparklineSql("events_x", hour, planEndpoints({ filter: filter(hour.lowerMs, hour.upperMs), sparklinePoints: 30 }, hour), 100),
  ).not.toBeNull();
  const tenMinutes = { lowerMs: day.lowerMs, upperMs: day.lowerMs + 600_000 };
  const fine = planEndpoints({ filter: filter(tenMinutes.lowerMs, tenMinutes.upperMs), sparklinePoints: 60 }, tenMinutes);
  expect(rollupSparklineSql("events_x", tenMinutes, fine, 100)).toBeNull();
});

test("cut edges are read from the events, only where the range cuts a minute", () => {
  const aligned = { lowerMs: 1_700_000_040_000, upperMs: 1_700_003_640_000 };
  const whole = rollupEndpointsSql("events_x", aligned, planEndpoints({ filter: filter(aligned.lowerMs, aligned.upperMs) }, aligned));
  expect(whole).not.toContain("UNION ALL");
  const cut = { lowerMs: aligned.lowerMs + 500, upperMs: aligned.upperMs - 500 };
  const sql = rollupEndpointsSql("events_x", cut, planEndpoints({ filter: filter(cut.lowerMs, cut.upperMs) }, cut))!;
  expect(sql).toContain(`(time >= ${cut.lowerMs * 1000} AND time < ${(aligned.lowerMs + 60_000) * 1000})`);
  expect(sql).toContain(`(time >= ${(aligned.upperMs - 60_000) * 1000} AND time < ${cut.upperMs * 1000})`);
});

test("on a cluster the rollup is a local table per shard with a Distributed table over them, the view on each shard's events", () => {
  const [local, distributed, view] = rollupStatements("events_x", "events_x_local", { name: "c", replicated: true });
  expect(local).toContain("CREATE TABLE IF NOT EXISTS events_x_rollup_local ON CLUSTER c");
  expect(local).toContain("ReplicatedAggregatingMergeTree('/clickhouse/tables/{shard}/tapscope/events_x_rollup_local', '{replica}')");
  expect(distributed).toContain("ENGINE = Distributed(c, currentDatabase(), events_x_rollup_local, rand())");
  expect(view).toContain("CREATE MATERIALIZED VIEW IF NOT EXISTS events_x_rollup_mv ON CLUSTER c TO events_x_rollup_local AS SELECT");
  expect(view).toContain("FROM events_x_local GROUP BY");
  const single = rollupStatements("events_x", "events_x", undefined);
  expect(single).toHaveLength(2);
  expect(single[0]).toContain("ENGINE = AggregatingMergeTree");
});

test("a backfill reads one hour of events at a time, none timed from when the view was made", () => {
  const hour = 500_000;
  const from = hour * 3_600_000_000;
  expect(backfillSql("events_x", hour, from + 3_600_000_000 * 3)).toContain(
    `FROM events_x WHERE time >= ${from} AND time < ${from + 3_600_000_000} GROUP BY`,
  );
  expect(backfillSql("events_x", hour, from + 5)).toContain(`WHERE time >= ${from} AND time < ${from + 5} GROUP BY`);
  expect(backfillSql("events_x", hour, 0)).toMatch(/^INSERT INTO events_x_rollup SELECT/);
});
