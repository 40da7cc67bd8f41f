import { useCallback, useEffect, useMemo, useState } from "react";
import { useNavigate, useSearchParams } from "react-router";
import { joinFilterChips } from "~/lib/filter/parse.ts";
import type { EndpointRow } from "~/lib/protocol/query.ts";
import { formatInZone } from "~/lib/time/typed-time.ts";
import { AlertsPanel } from "~/ui/endpoints/alerts-panel.tsx";
import { type EndpointSort, EndpointsTable, endpointClauses, endpointFilterText } from "~/ui/endpoints/endpoints-table.tsx";
import { RoutePatterns } from "~/ui/endpoints/route-patterns.tsx";
import { ExplorerFilterBar } from "~/ui/explorer/explorer-filter-bar.tsx";
import { decodeState, defaultState, type ExplorerState, encodeState, toQueryFilter } from "~/ui/explorer/explorer-state.ts";
import type { EndpointsAnswer, QueryClient } from "~/ui/explorer/query-client.ts";
import { QueryError } from "~/ui/explorer/query-error.tsx";
import { RangeControls } from "~/ui/explorer/range-controls.tsx";
import { useTunnelClient } from "~/ui/explorer/requests-screen.tsx";
import { useQuery } from "~/ui/explorer/use-query.ts";
import { useTimeZone } from "~/ui/lib/time-zone.ts";
import { useDashboard } from "~/ui/pages/dashboard/dashboard-state.ts";
import { DashboardIndex } from "~/ui/pages/dashboard/live-screen.tsx";

const sparklinePoints = 30;

/** Route body of /dashboard/{ns}/endpoints: the Endpoints table over the explorer's range and filters, and the alerts. */
export function EndpointsScreen() {
  const { namespace, self } = useDashboard();
  if (!namespace) return <DashboardIndex />;
  return (
    <div className="flex min-h-0 flex-1 flex-col overflow-y-auto px-4 py-4 sm:px-6">
      <title>Endpoints | Tapscope</title>
      <h1 className="mb-3 pl-8 text-xl font-semibold tracking-tight text-zinc-100 md:pl-0">Endpoints</h1>
      <EndpointsBody
        key={namespace.namespaceId}
        namespaceId={namespace.namespaceId}
        namespaceName={namespace.name}
        selfEmail={self.email}
      />
    </div>
  );
}

function EndpointsBody({ namespaceId, namespaceName, selfEmail }: { namespaceId: string; namespaceName: string; selfEmail: string }) {
  const { client } = useTunnelClient(namespaceId);
  const [params, setParams] = useSearchParams();
  const raw = params.get("filter");
  const state = useMemo(() => decodeState(raw, Date.now()), [raw]);
  const setState = useCallback(
    (next: ExplorerState, replace = false) => {
      setParams(
        (p) => {
          const q = new URLSearchParams(p);
          q.set("filter", encodeState(next));
          return q;
        },
        { replace, preventScrollReset: true },
      );
    },
    [setParams],
  );
  // "Now" is the browser's: render after hydration only.
  const [isMounted, setMounted] = useState(false);
  useEffect(() => setMounted(true), []);
  useEffect(() => {
    if (!state) setState(defaultState(Date.now()), true);
  }, [state, setState]);

  if (!state || !isMounted || !client) return <p className="p-6 text-sm text-zinc-500">Loading…</p>;
  return (
    <EndpointsView
      state={state}
      setState={setState}
      client={client}
      namespaceId={namespaceId}
      namespaceName={namespaceName}
      selfEmail={selfEmail}
    />
  );
}

function EndpointsView({
  state,
  setState,
  client,
  namespaceId,
  namespaceName,
  selfEmail,
}: {
  state: ExplorerState;
  setState: (s: ExplorerState, replace?: boolean) => void;
  client: QueryClient;
  namespaceId: string;
  namespaceName: string;
  selfEmail: string;
}) {
  const navigate = useNavigate();
  const [sort, setSort] = useState<EndpointSort>({ key: "requests", dir: "desc" });
  const filterText = joinFilterChips(state.text);
  // The explorer's focus, when one is set, is the range looked at.
  const filter = useMemo(() => toQueryFilter(state, true), [state]);
  const range = filter.focus ?? filter.global;
  const key = JSON.stringify([filter, filterText]);
  const answer = useQuery<EndpointsAnswer>(key, (signal) => client.endpoints(filter, filterText, { sparklinePoints }, signal));

  const open = (row: EndpointRow) => {
    const next: ExplorerState = {
      ...state,
      clauses: [...state.clauses, ...endpointClauses(row)],
      text: [...state.text, endpointFilterText(row)],
    };
    navigate(`/dashboard/${encodeURIComponent(namespaceName)}/requests?${new URLSearchParams({ filter: encodeState(next) })}`);
  };

  const rows = answer.data?.rows ?? [];
  const [tz] = useTimeZone();
  return (
    <div className="flex flex-col gap-3">
      <ExplorerFilterBar
        key={JSON.stringify(state.text)}
        chips={state.text}
        namespaceId={namespaceId}
        onChips={(text) => setState({ ...state, text })}
      />
      <RangeControls
        global={state.global}
        focus={state.focus}
        tz={tz}
        onChange={({ global, focus }) => setState({ ...state, global, focus })}
      />
      <div className="flex flex-wrap items-center gap-x-3 text-xs text-zinc-400" aria-live="polite">
        <span data-testid="endpoint-count">
          {answer.data ? `${rows.length.toLocaleString("en-US")} endpoint${rows.length === 1 ? "" : "s"}` : "…"}
        </span>
        <span>
          {formatInZone(range.lowerMs, tz)} → {formatInZone(range.upperMs, tz)}
        </span>
        {answer.data?.quantiles === "approximate" ? <span title="ClickHouse t-digest">percentiles approximate</span> : null}
        {answer.data?.wasRowLimitExceeded ? (
          <span className="text-amber-300">only the busiest endpoints are shown: filter to see the rest</span>
        ) : null}
        {answer.status === "loading" ? <span className="text-zinc-500">Loading…</span> : null}
      </div>
      {answer.status === "failed" ? <QueryError what="The endpoints" message={answer.message} onRetry={answer.retry} /> : null}
      {answer.data && rows.length === 0 && answer.status === "done" ? (
        <p className="rounded-lg border border-zinc-800 p-6 text-sm text-zinc-500">No HTTP requests in this time range match.</p>
      ) : null}
      {rows.length > 0 ? (
        <EndpointsTable rows={rows} rangeSeconds={(range.upperMs - range.lowerMs) / 1000} sort={sort} onSort={setSort} onOpen={open} />
      ) : null}
      <AlertsPanel namespaceId={namespaceId} endpoints={rows} selfEmail={selfEmail} />
      <RoutePatterns namespaceId={namespaceId} />
    </div>
  );
}
