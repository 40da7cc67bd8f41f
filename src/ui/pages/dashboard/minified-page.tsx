import { useEffect, useMemo, useState } from "react";
import { useSearchParams } from "react-router";
import { joinFilterChips } from "~/lib/filter/parse.ts";
import { highlightTerms } from "~/lib/filter/search.ts";
import { formatInZone } from "~/lib/time/typed-time.ts";
import { ZoneToggle } from "~/ui/components/zone-toggle.tsx";
import { decodeState, type ExplorerState, toQueryFilter } from "~/ui/explorer/explorer-state.ts";
import { useTunnelClient } from "~/ui/explorer/requests-screen.tsx";
import { ResultsPanel } from "~/ui/explorer/results-panel.tsx";
import { api, isAbortError } from "~/ui/lib/api.ts";
import { useTimeZone } from "~/ui/lib/time-zone.ts";

/**
 * /minified/?namespace={id}&filter={state}: the explorer's results on their own page,
 * e.g. to open a brushed range in a tab of its own. Same session and tunnel rules as the explorer. It says what it
 * shows: the namespace, the range and the filters, with a way back to the explorer.
 */
export function MinifiedResultsPage() {
  const [params] = useSearchParams();
  const namespaceId = params.get("namespace") ?? "";
  const state = useMemo(() => decodeState(params.get("filter")), [params]);
  return (
    <main className="flex h-dvh flex-col bg-zinc-950 p-2 text-zinc-100">
      <title>Results | Tapscope</title>
      {namespaceId && state ? (
        <MinifiedResults namespaceId={namespaceId} state={state} filterParam={params.get("filter") ?? ""} />
      ) : (
        <p className="p-4 text-sm text-zinc-400">Open results from the requests explorer.</p>
      )}
    </main>
  );
}

/** The namespace's name, looked up among the signed-in user's namespaces (null until known, or when not theirs). */
function useNamespaceName(namespaceId: string): string | null {
  const [name, setName] = useState<string | null>(null);
  useEffect(() => {
    const controller = new AbortController();
    const { signal } = controller;
    (async () => {
      const { orgs } = await api("ListOrgs", {}, { signal });
      for (const org of orgs) {
        const { namespaces } = await api("ListNamespaces", { orgId: org.orgId }, { signal });
        const found = namespaces.find((ns) => ns.namespaceId === namespaceId);
        if (found) return setName(found.name);
      }
    })().catch((err) => {
      if (!isAbortError(err)) setName(null);
    });
    return () => controller.abort();
  }, [namespaceId]);
  return name;
}

function MinifiedResults({ namespaceId, state, filterParam }: { namespaceId: string; state: ExplorerState; filterParam: string }) {
  const { client } = useTunnelClient(namespaceId);
  const [tz] = useTimeZone();
  const name = useNamespaceName(namespaceId);
  const filter = useMemo(() => toQueryFilter(state, true), [state]);
  const highlight = useMemo(() => highlightTerms(state.text), [state]);
  const range = state.focus ?? state.global;
  const filters = [
    ...state.text,
    ...state.clauses.map((c) => `${c.column} ${c.op} ${typeof c.value === "string" ? JSON.stringify(c.value) : c.value}`),
  ];
  return (
    <>
      <header data-testid="minified-summary" className="mb-2 flex flex-wrap items-center gap-x-3 gap-y-1 px-1 text-xs text-zinc-400">
        <span>
          Namespace <span className="font-medium text-zinc-100">{name ?? namespaceId}</span>
        </span>
        <span className="font-mono text-zinc-300">
          {formatInZone(range.startMs, tz)} → {formatInZone(range.endMs, tz)}
        </span>
        <span className="min-w-0 font-mono break-all text-zinc-300">{filters.length ? filters.join(" && ") : "no filters"}</span>
        <span className="flex-1" />
        <ZoneToggle />
        {name ? (
          <a
            href={`/dashboard/${encodeURIComponent(name)}/requests?${new URLSearchParams({ filter: filterParam })}`}
            className="text-zinc-300 underline-offset-2 hover:text-zinc-100 hover:underline"
          >
            Open in the explorer
          </a>
        ) : null}
      </header>
      {client ? (
        <ResultsPanel client={client} filter={filter} filterText={joinFilterChips(state.text)} tz={tz} highlight={highlight} />
      ) : null}
    </>
  );
}
