import { Spinner } from "~/ui/components/spinner.tsx";
import { LiveScreenView } from "~/ui/live/live-screen.tsx";
import { useDashboard } from "~/ui/pages/dashboard/dashboard-state.ts";
import { usePublicConfig } from "~/ui/shell.tsx";

export function DashboardIndex() {
  return (
    <div className="flex flex-1 items-center justify-center text-sm text-zinc-500">
      <title>Dashboard | Tapscope</title>
      <Spinner className="mr-2 size-4" /> Loading your workspace…
    </div>
  );
}

export function LiveScreen() {
  const { namespace, org } = useDashboard();
  const { commitHash } = usePublicConfig();
  if (!namespace || !org) return <DashboardIndex />;
  return (
    <div className="flex min-h-0 flex-1 flex-col px-4 py-4 sm:px-6">
      <title>Live | Tapscope</title>
      <h1 className="mb-3 pl-8 text-xl font-semibold tracking-tight text-zinc-100 md:pl-0">Live</h1>
      <LiveScreenView key={namespace.namespaceId} namespaceId={namespace.namespaceId} orgId={org.orgId} commitHash={commitHash} />
    </div>
  );
}
