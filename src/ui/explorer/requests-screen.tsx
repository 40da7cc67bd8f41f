import { useEffect, useState } from "react";
import { ExplorerView } from "./explorer-view.tsx";
import { type ConnectionState, type QueryClient, tunnelQueryClient } from "./query-client.ts";

/** One query tunnel per namespace: the connection resets when the namespace changes. */
export function useTunnelClient(namespaceId: string): {
  client: QueryClient | null;
  connection: ConnectionState;
} {
  const [client, setClient] = useState<QueryClient | null>(null);
  const [connection, setConnection] = useState<ConnectionState>("idle");
  useEffect(() => {
    const c = tunnelQueryClient(namespaceId, setConnection);
    setClient(c);
    return () => c.close();
  }, [namespaceId]);
  return { client, connection };
}

/** /dashboard/{ns}/requests: the explorer over the namespace's query tunnel. */
export function RequestsExplorer({ namespaceId }: { namespaceId: string }) {
  const { client, connection } = useTunnelClient(namespaceId);
  return (
    <div className="flex min-h-0 flex-1 flex-col max-sm:min-h-auto" data-connection={connection}>
      {client ? <ExplorerView client={client} namespaceId={namespaceId} /> : <p className="p-6 text-sm text-zinc-500">Loading…</p>}
    </div>
  );
}
