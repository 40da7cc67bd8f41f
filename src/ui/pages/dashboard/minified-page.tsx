import { useMemo } from "react";
import { useSearchParams } from "react-router";
import { joinFilterChips } from "~/lib/filter/parse.ts";
import { highlightTerms } from "~/lib/filter/search.ts";
import { decodeState, toQueryFilter } from "~/ui/explorer/explorer-state.ts";
import { useTunnelClient } from "~/ui/explorer/requests-screen.tsx";
import { ResultsPanel } from "~/ui/explorer/results-panel.tsx";

/**
 * /minified/?namespace={id}&filter={state}: the explorer's results on their own page,
 * e.g. to open a brushed range in a tab of its own. Same session and tunnel rules as the explorer.
 */
export function MinifiedResultsPage() {
  const [params] = useSearchParams();
  const namespaceId = params.get("namespace") ?? "";
  const state = useMemo(() => decodeState(params.get("filter")), [params]);
  return (
    <main className="flex h-screen flex-col bg-zinc-950 p-2 text-zinc-100">
      <title>Results | Tapscope</title>
      {namespaceId && state ? (
        <MinifiedResults namespaceId={namespaceId} state={state} />
      ) : (
        <p className="p-4 text-sm text-zinc-400">Open results from the requests explorer.</p>
      )}
    </main>
  );
}

function MinifiedResults({ namespaceId, state }: { namespaceId: string; state: NonNullable<ReturnType<typeof decodeState>> }) {
  const { client } = useTunnelClient(namespaceId);
  const filter = useMemo(() => toQueryFilter(state, true), [state]);
  const highlight = useMemo(() => highlightTerms(state.text), [state]);
  if (!client) return null;
  return <ResultsPanel client={client} filter={filter} filterText={joinFilterChips(state.text)} tz={state.tz} highlight={highlight} />;
}
