import { Spinner } from "~/ui/components/spinner.tsx";
import { useDashboard } from "~/ui/pages/dashboard/dashboard-state.ts";
import { Screen } from "~/ui/pages/dashboard/screen.tsx";

export function DashboardIndex() {
  return (
    <div className="flex flex-1 items-center justify-center text-sm text-zinc-500">
      <Spinner className="mr-2 size-4" /> Loading your workspace…
    </div>
  );
}

export function LiveScreen() {
  const { namespace } = useDashboard();
  return (
    <Screen title="Live" description={namespace ? `Requests in ${namespace.name} appear here as they happen.` : undefined}>
      <div className="rounded-lg border border-dashed border-zinc-800 p-10 text-center text-sm text-zinc-500">
        Run your server with <code className="font-mono text-zinc-300">tapscope run -- &lt;command&gt;</code> to see requests here.
      </div>
    </Screen>
  );
}

export function RequestsScreen() {
  return <Screen title="Requests" description="Search every captured request over time." />;
}

export function BillingScreen() {
  return <Screen title="Billing" description="You are on the Free plan." />;
}
