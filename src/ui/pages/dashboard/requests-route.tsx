import { RequestsExplorer } from "~/ui/explorer/requests-screen.tsx";
import { useDashboard } from "~/ui/pages/dashboard/dashboard-state.ts";
import { DashboardIndex } from "~/ui/pages/dashboard/live-screen.tsx";

/** Route body of /dashboard/{ns}/requests. */
export function RequestsRoute() {
  const { namespace } = useDashboard();
  if (!namespace) return <DashboardIndex />;
  return (
    <div className="flex min-h-0 flex-1 flex-col px-4 py-4 max-sm:min-h-auto sm:px-6">
      <title>Requests | Tapscope</title>
      <h1 className="mb-3 pl-8 text-xl font-semibold tracking-tight text-zinc-100 md:pl-0">Requests</h1>
      <RequestsExplorer key={namespace.namespaceId} namespaceId={namespace.namespaceId} />
    </div>
  );
}
