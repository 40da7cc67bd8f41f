import { formatBytes, formatDuration } from "~/lib/format.ts";
import type { Clause, EndpointRow } from "~/lib/protocol/query.ts";

export type EndpointSortKey = "route" | "requests" | "errors" | "p50" | "p95" | "p99" | "max" | "bytesIn" | "bytesOut";
export type EndpointSort = { key: EndpointSortKey; dir: "asc" | "desc" };

const errorShare = (r: EndpointRow) => (r.requests === 0 ? 0 : (r.clientErrors + r.serverErrors) / r.requests);

function sortValue(r: EndpointRow, key: EndpointSortKey): number | string {
  if (key === "route") return `${r.host}${r.route}\u0000${r.method}`;
  if (key === "errors") return errorShare(r);
  return r[key];
}

export function sortEndpoints(rows: readonly EndpointRow[], sort: EndpointSort): EndpointRow[] {
  const sign = sort.dir === "asc" ? 1 : -1;
  return rows.toSorted((a, b) => {
    const x = sortValue(a, sort.key);
    const y = sortValue(b, sort.key);
    if (x === y) return b.requests - a.requests;
    return (x < y ? -1 : 1) * sign;
  });
}

/** The filter-language text that keeps one endpoint's requests (what a row click adds to the Requests explorer). */
export function endpointFilterText(row: Pick<EndpointRow, "method" | "route">): string {
  const parts: string[] = [];
  if (row.method) parts.push(`request.method == ${JSON.stringify(row.method)}`);
  parts.push(`request.route == ${JSON.stringify(row.route)}`);
  return parts.join(" && ");
}

/** The clauses that keep one endpoint's service and direction (an outgoing call's host too): the rest is the filter text. */
export function endpointClauses(row: Pick<EndpointRow, "service" | "isOutgoing" | "host">): Clause[] {
  const clauses: Clause[] = [
    { type: "String", column: "service", op: "Equals", value: row.service },
    { type: "Number", column: "http_is_outgoing", op: "Equals", value: row.isOutgoing ? 1 : 0 },
  ];
  if (row.isOutgoing) clauses.push({ type: "String", column: "http_req_host", op: "Equals", value: row.host });
  return clauses;
}

export function formatRate(requests: number, seconds: number): string {
  if (seconds <= 0) return "—";
  const perSecond = requests / seconds;
  if (perSecond >= 1) return `${perSecond.toFixed(1)}/s`;
  const perMinute = perSecond * 60;
  return perMinute >= 0.1 ? `${perMinute.toFixed(1)}/min` : `${(perMinute * 60).toFixed(1)}/h`;
}

function formatPercent(part: number, whole: number): string {
  if (whole === 0 || part === 0) return "0%";
  const p = (100 * part) / whole;
  return p < 0.1 ? "<0.1%" : `${p.toFixed(1)}%`;
}

const columns: { key: EndpointSortKey; label: string; title?: string }[] = [
  { key: "route", label: "Endpoint" },
  { key: "requests", label: "Requests", title: "Requests and rate over the range" },
  { key: "errors", label: "Errors", title: "4xx and 5xx responses, as a share of the requests" },
  { key: "p50", label: "p50" },
  { key: "p95", label: "p95" },
  { key: "p99", label: "p99" },
  { key: "max", label: "Max" },
  { key: "bytesIn", label: "In", title: "Request bytes" },
  { key: "bytesOut", label: "Out", title: "Response bytes" },
];

/** One row per service, method and route: sortable by each number, a click opens the endpoint's requests. */
export function EndpointsTable({
  rows,
  rangeSeconds,
  sort,
  onSort,
  onOpen,
}: {
  rows: readonly EndpointRow[];
  rangeSeconds: number;
  sort: EndpointSort;
  onSort: (sort: EndpointSort) => void;
  onOpen: (row: EndpointRow) => void;
}) {
  const sorted = sortEndpoints(rows, sort);
  return (
    <div className="overflow-x-auto rounded-lg border border-zinc-800 bg-zinc-950">
      <table className="w-full min-w-[60rem] text-left text-xs" aria-label="Endpoints" data-testid="endpoints-table">
        <thead className="bg-zinc-900/80 text-[11px] font-semibold tracking-wider text-zinc-400 uppercase">
          <tr>
            {columns.map((c) => {
              const active = sort.key === c.key;
              return (
                <th
                  key={c.key}
                  scope="col"
                  aria-sort={active ? (sort.dir === "asc" ? "ascending" : "descending") : "none"}
                  className={`px-3 py-2 ${c.key === "route" ? "" : "text-right"}`}
                  title={c.title}
                >
                  <button
                    type="button"
                    className={`uppercase hover:text-zinc-100 ${active ? "text-zinc-100" : ""}`}
                    onClick={() =>
                      onSort({ key: c.key, dir: active && sort.dir === "desc" ? "asc" : c.key === "route" && !active ? "asc" : "desc" })
                    }
                  >
                    {c.label}
                    {active ? (sort.dir === "desc" ? " ↓" : " ↑") : ""}
                  </button>
                </th>
              );
            })}
            <th scope="col" className="px-3 py-2 text-right">
              p95 over time
            </th>
          </tr>
        </thead>
        <tbody className="font-mono">
          {sorted.map((r) => {
            const key = JSON.stringify([r.service, r.isOutgoing, r.host, r.method, r.route]);
            return (
              <tr
                key={key}
                data-endpoint={`${r.method} ${r.route}`}
                tabIndex={0}
                onClick={() => onOpen(r)}
                onKeyDown={(e) => {
                  if (e.key === "Enter") onOpen(r);
                }}
                className="cursor-pointer border-t border-zinc-900 hover:bg-zinc-800/60 focus-visible:bg-zinc-800/60 focus-visible:outline-none"
              >
                <td className="max-w-[28rem] px-3 py-1.5">
                  <div className="flex min-w-0 items-baseline gap-2">
                    <span className="shrink-0 font-semibold text-zinc-200">
                      {r.isOutgoing ? (
                        <span className="text-sky-400" title="An outgoing call">
                          ↗{" "}
                        </span>
                      ) : null}
                      {r.method || "—"}
                    </span>
                    <span className="truncate text-zinc-100" title={`${r.host}${r.route}`}>
                      {r.isOutgoing ? <span className="text-zinc-500">{r.host}</span> : null}
                      {r.route || <span className="text-zinc-500">(recorded before routes)</span>}
                    </span>
                  </div>
                  <div className="truncate font-sans text-[11px] text-zinc-500">{r.service || "unnamed service"}</div>
                </td>
                <td className="px-3 py-1.5 text-right text-zinc-200">
                  {r.requests.toLocaleString("en-US")}
                  <div className="text-[11px] text-zinc-500">{formatRate(r.requests, rangeSeconds)}</div>
                </td>
                <td className="px-3 py-1.5 text-right" data-cell="errors">
                  <span className={r.clientErrors > 0 ? "text-amber-300" : "text-zinc-500"} title="4xx">
                    {formatPercent(r.clientErrors, r.requests)}
                  </span>
                  <span className="text-zinc-600"> · </span>
                  <span className={r.serverErrors > 0 ? "text-red-400" : "text-zinc-500"} title="5xx">
                    {formatPercent(r.serverErrors, r.requests)}
                  </span>
                </td>
                <td className="px-3 py-1.5 text-right text-zinc-300">{formatDuration(r.p50)}</td>
                <td className="px-3 py-1.5 text-right text-zinc-300">{formatDuration(r.p95)}</td>
                <td className="px-3 py-1.5 text-right text-zinc-100" data-cell="p99">
                  {formatDuration(r.p99)}
                </td>
                <td className="px-3 py-1.5 text-right text-zinc-400">{formatDuration(r.max)}</td>
                <td className="px-3 py-1.5 text-right text-zinc-500">{formatBytes(r.bytesIn)}</td>
                <td className="px-3 py-1.5 text-right text-zinc-500">{formatBytes(r.bytesOut)}</td>
                <td className="px-3 py-1.5 text-right">
                  <Sparkline points={r.sparkline} />
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </div>
  );
}

/** A row's p95 across the range, scaled to its own highest point; gaps where it had no requests. */
export function Sparkline({ points }: { points: ReadonlyArray<number | null> }) {
  const width = 96;
  const height = 20;
  const max = Math.max(1, ...points.map((p) => p ?? 0));
  const step = points.length > 1 ? width / (points.length - 1) : width;
  const runs: string[] = [];
  let run: string[] = [];
  points.forEach((p, i) => {
    if (p === null) {
      if (run.length) runs.push(run.join(" "));
      run = [];
      return;
    }
    run.push(`${(i * step).toFixed(1)},${(height - 1 - (p / max) * (height - 2)).toFixed(1)}`);
  });
  if (run.length) runs.push(run.join(" "));
  return (
    <svg viewBox={`0 0 ${width} ${height}`} className="ml-auto inline-block h-5 w-24" role="img" aria-label="p95 over the range">
      {runs.map((r) =>
        r.includes(" ") ? (
          <polyline key={r} points={r} fill="none" className="stroke-sky-400" strokeWidth={1.25} />
        ) : (
          <circle key={r} cx={r.split(",")[0]} cy={r.split(",")[1]} r={1.25} className="fill-sky-400" />
        ),
      )}
    </svg>
  );
}
