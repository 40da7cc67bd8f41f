import type { OpenTunnels } from "~/engines/workers/open-tunnels.ts";
import type { OpenTunnelSummary } from "~/lib/protocol/api/tunnel.ts";

/** ListOpenTunnels: the caller's tunnels created after a time, oldest first, on every node of a cluster. */
export async function listOpenTunnels({
  tunnels,
  principalKey,
  createAfterTime,
  now,
}: {
  tunnels: OpenTunnels;
  principalKey: string;
  createAfterTime: string | number | undefined;
  now: Date;
}): Promise<OpenTunnelSummary[]> {
  const after = createAfterTime === undefined ? 0 : new Date(createAfterTime).getTime();
  return (await tunnels.listEverywhere(principalKey, Number.isFinite(after) ? after : 0, now.getTime())).map((t) => ({
    tunnel_id: t.tunnelId,
    role: t.role,
    namespace_id: t.namespaceId,
    create_time: new Date(t.createTimeMs).toISOString(),
  }));
}
