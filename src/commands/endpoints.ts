import { TunnelClient, TunnelConnectError, TunnelQueryError } from "~/agent/query-client.ts";
import { errorMessage } from "~/lib/errors.ts";
import { formatBytes, formatDuration } from "~/lib/format.ts";
import { type EndpointRow, endpointLimits } from "~/lib/protocol/query.ts";
import { parseAgentConfig } from "~/lib/server/env.ts";
import { parseFlags } from "~/lib/server/flags.ts";
import { filterProblem, timeWindow, windowFlags } from "./time-window.ts";

const sortKeys = ["requests", "rate", "errors", "4xx", "5xx", "p50", "p95", "p99", "max", "in", "out"] as const;
type SortKey = (typeof sortKeys)[number];

const usage = `usage: tapscope endpoints [--since 1h|15m|2d | --from ISO [--to ISO]] [--filter EXPR] [--sort ${sortKeys.join("|")}] [--limit N] [--format table|json]
  One row per service, method and route (outgoing calls with their host): requests, rate, 4xx and 5xx rates,
  p50/p95/p99/max duration, request and response bytes; the same numbers as the dashboard's Endpoints screen.
  TAPSCOPE_TOKEN (a namespace token) and TAPSCOPE_ENDPOINT (the server) come from the environment.
  --filter uses the filter language: request.route startsWith "/api/", response.status >= 500`;

const flagSpec = {
  ...windowFlags,
  sort: { type: "string" },
  limit: { type: "string" },
  format: { type: "string" },
  help: { type: "boolean", short: "h" },
} as const;

function fail(message: string, code = 2): number {
  process.stderr.write(`tapscope endpoints: ${message}\n`);
  return code;
}

const percent = (part: number, whole: number) => (whole === 0 ? 0 : (100 * part) / whole);

function sortValue(row: EndpointRow, key: SortKey): number {
  switch (key) {
    case "requests":
    case "rate":
      return row.requests;
    case "errors":
      return percent(row.clientErrors + row.serverErrors, row.requests);
    case "4xx":
      return percent(row.clientErrors, row.requests);
    case "5xx":
      return percent(row.serverErrors, row.requests);
    case "in":
      return row.bytesIn;
    case "out":
      return row.bytesOut;
    default:
      return row[key];
  }
}

/** A row's route as the table shows it: an outgoing call with its host. */
export function endpointName(row: Pick<EndpointRow, "isOutgoing" | "host" | "route">): string {
  const route = row.route || "(recorded before routes)";
  return row.isOutgoing ? `${row.host}${row.route}` || route : route;
}

const rate = (n: number, seconds: number) => {
  const perSecond = n / seconds;
  return perSecond >= 1 ? `${perSecond.toFixed(1)}/s` : `${(perSecond * 60).toFixed(1)}/min`;
};
const pct = (n: number) => (n === 0 ? "0" : n < 0.1 ? "<0.1" : n.toFixed(1));

export function formatEndpointsTable(rows: readonly EndpointRow[], rangeSeconds: number): string {
  const header = ["SERVICE", "METHOD", "ROUTE", "REQUESTS", "RATE", "4XX%", "5XX%", "P50", "P95", "P99", "MAX", "IN", "OUT"];
  const cells = rows.map((r) => [
    r.service || "-",
    (r.isOutgoing ? "↗" : "") + (r.method || "-"),
    endpointName(r),
    String(r.requests),
    rate(r.requests, rangeSeconds),
    pct(percent(r.clientErrors, r.requests)),
    pct(percent(r.serverErrors, r.requests)),
    formatDuration(r.p50),
    formatDuration(r.p95),
    formatDuration(r.p99),
    formatDuration(r.max),
    formatBytes(r.bytesIn),
    formatBytes(r.bytesOut),
  ]);
  const all = [header, ...cells];
  const widths = header.map((_, i) => Math.max(...all.map((row) => row[i]?.length ?? 0)));
  // Text columns left, numbers right.
  const isText = (i: number) => i < 3;
  return `${all
    .map((row) => row.map((c, i) => (isText(i) ? c.padEnd(widths[i] ?? 0) : c.padStart(widths[i] ?? 0))).join("  "))
    .join("\n")}\n`;
}

export async function main(args: string[]): Promise<number> {
  const agent = parseAgentConfig();
  const parsed = parseFlags(args, flagSpec);
  if (!parsed.ok) return fail(`${parsed.error}\n${usage}`);
  const { flags } = parsed;
  if (flags.help) {
    process.stdout.write(`${usage}\n`);
    return 0;
  }
  const sort = (flags.sort ?? "requests") as SortKey;
  if (!sortKeys.includes(sort)) return fail(`--sort must be one of ${sortKeys.join(", ")}, got "${flags.sort}"`);
  const limit = Number(flags.limit ?? 100);
  if (!Number.isInteger(limit) || limit < 1 || limit > endpointLimits.maxRows)
    return fail(`--limit must be 1 to ${endpointLimits.maxRows}`);
  const format = flags.format ?? "table";
  if (format !== "table" && format !== "json") return fail(`--format must be table or json, got "${format}"`);
  const window = timeWindow(flags, Date.now());
  if ("error" in window) return fail(window.error);
  const { lowerMs, upperMs } = window;
  const filterText = flags.filter ?? "";
  const filterError = filterProblem(filterText);
  if (filterError) return fail(filterError);
  if (!agent.token) return fail("TAPSCOPE_TOKEN is not set: create a namespace token under Tokens in the dashboard and export it");

  let client: TunnelClient;
  try {
    client = await TunnelClient.open({ endpoint: agent.endpoint, token: agent.token, role: "SELECT" });
  } catch (err) {
    if (err instanceof TunnelConnectError && err.status === 401) return fail("the server refused TAPSCOPE_TOKEN (revoked or mistyped?)", 1);
    if (err instanceof TunnelConnectError && err.status === undefined) {
      return fail(`cannot reach the server at ${agent.endpoint} (is TAPSCOPE_ENDPOINT right?): ${err.message}`, 1);
    }
    return fail(errorMessage(err), 1);
  }
  try {
    // The busiest endpoints are asked for; the sort then orders what came back.
    const answer = await client.query(
      {
        kind: "endpoints",
        query: { filter: { clauses: [], global: { lowerMs, upperMs } }, limit: endpointLimits.maxRows },
        filterText: filterText.trim() || undefined,
      },
      { compression: "gzip" },
    );
    const rows = (answer.data as EndpointRow[]).toSorted((a, b) => sortValue(b, sort) - sortValue(a, sort)).slice(0, limit);
    if (answer.wasRowLimitExceeded) {
      process.stderr.write(
        `tapscope endpoints: only the ${endpointLimits.maxRows} busiest endpoints were looked at (--filter narrows it)\n`,
      );
    }
    if (rows.length === 0) {
      process.stderr.write("tapscope endpoints: no HTTP requests matched (widen --since or loosen --filter)\n");
      return 0;
    }
    const seconds = (upperMs - lowerMs) / 1000;
    if (format === "json") {
      const lines = rows.map((r) =>
        JSON.stringify({
          service: r.service,
          direction: r.isOutgoing ? "outgoing" : "inbound",
          host: r.host,
          method: r.method,
          route: r.route,
          requests: r.requests,
          ratePerSecond: r.requests / seconds,
          clientErrors: r.clientErrors,
          serverErrors: r.serverErrors,
          p50Micros: r.p50,
          p95Micros: r.p95,
          p99Micros: r.p99,
          maxMicros: r.max,
          bytesIn: r.bytesIn,
          bytesOut: r.bytesOut,
        }),
      );
      await Bun.write(Bun.stdout, `${lines.join("\n")}\n`);
    } else {
      await Bun.write(Bun.stdout, formatEndpointsTable(rows, seconds));
    }
    if (answer.quantiles === "approximate") {
      process.stderr.write(
        "tapscope endpoints: percentiles are the store's approximation (ClickHouse t-digest; see the docs for its error)\n",
      );
    }
    return 0;
  } catch (err) {
    if (err instanceof TunnelQueryError) return fail(err.message, 1);
    if (err instanceof TunnelConnectError) return fail(`lost the connection to ${agent.endpoint}: ${err.message}`, 1);
    throw err;
  } finally {
    client.close();
  }
}
