import { useCallback, useEffect, useRef } from "react";
import { Spinner } from "~/ui/components/spinner.tsx";
import { LiveScreenView } from "~/ui/live/live-screen.tsx";
import { isWorkerRecent, useDashboard } from "~/ui/pages/dashboard/dashboard-state.ts";
import { usePublicConfig } from "~/ui/shell.tsx";

export function DashboardIndex() {
  return (
    <div className="flex flex-1 items-center justify-center text-sm text-zinc-500">
      <title>Dashboard | Tapscope</title>
      <Spinner className="mr-2 size-4" /> Loading your workspace…
    </div>
  );
}

/** How often, and how many times, the orgs are read again after a program connected, until its store shows as seen. */
const STORE_SEEN_TRIES = [500, 1000, 2000, 4000];

/**
 * Once a program is connected, the org's store is seen (the server records it as the socket opens): the Requests link
 * appears without a reload. The orgs are read again a few times until it does.
 */
function useRequestsLinkWhenConnected(): () => void {
  const { org, refreshOrgs } = useDashboard();
  const isRecent = isWorkerRecent(org?.lastSeenWorkerTime);
  const isRecentRef = useRef(isRecent);
  isRecentRef.current = isRecent;
  const timers = useRef<Array<ReturnType<typeof setTimeout>>>([]);
  useEffect(() => () => timers.current.forEach(clearTimeout), []);
  return useCallback(() => {
    if (isRecentRef.current || timers.current.length > 0) return;
    let at = 0;
    for (const delay of STORE_SEEN_TRIES) {
      at += delay;
      timers.current.push(
        setTimeout(() => {
          if (!isRecentRef.current) refreshOrgs().catch(() => {});
        }, at),
      );
    }
  }, [refreshOrgs]);
}

export function LiveScreen() {
  const { namespace, org, self } = useDashboard();
  const { commitHash } = usePublicConfig();
  const onProgramConnected = useRequestsLinkWhenConnected();
  if (!namespace || !org) return <DashboardIndex />;
  return (
    <div className="flex min-h-0 flex-1 flex-col px-4 py-4 sm:px-6">
      <title>Live | Tapscope</title>
      <h1 className="mb-3 pl-8 text-xl font-semibold tracking-tight text-zinc-100 md:pl-0">Live</h1>
      <LiveScreenView
        key={namespace.namespaceId}
        namespaceId={namespace.namespaceId}
        namespaceName={namespace.name}
        orgId={org.orgId}
        commitHash={commitHash}
        userId={self.userId}
        onProgramConnected={onProgramConnected}
      />
    </div>
  );
}
