import type { ClusterNode } from "~/engines/cluster/cluster-node.ts";
import { errorMessage } from "~/lib/errors.ts";
import type { TunnelRole } from "~/lib/protocol/tunnel.ts";
import { log } from "~/lib/server/logger.ts";

/** How long ListOpenTunnels waits for the other nodes of a cluster. */
const CLUSTER_LIST_TIMEOUT_MS = 2_000;

export type OpenTunnel = {
  tunnelId: string;
  principalKey: string;
  namespaceId: string;
  role: TunnelRole;
  createTimeMs: number;
  /** Until the ticket is redeemed: when it expires; while connected: null. */
  expiresAtMs: number | null;
};

/**
 * Tunnels created and not yet expired unredeemed or closed: this process's, and in a cluster every node's (a tunnel is
 * created on one node and its socket may land on another, which then holds it).
 */
export class OpenTunnels {
  private readonly tunnels = new Map<string, OpenTunnel>();
  private cluster: ClusterNode | null = null;

  joinCluster(cluster: ClusterNode): void {
    this.cluster = cluster;
    cluster.handle("tunnels", async (body) => {
      const { principalKey, createdAfterMs } = JSON.parse(body) as { principalKey: string; createdAfterMs: number };
      return JSON.stringify(this.list(String(principalKey), Number(createdAfterMs) || 0, Date.now()));
    });
  }

  /** list, over every node of the cluster (those that answer within two seconds); a connected entry wins over a pending one. */
  async listEverywhere(principalKey: string, createdAfterMs: number, nowMs: number): Promise<OpenTunnel[]> {
    const byId = new Map(this.list(principalKey, createdAfterMs, nowMs).map((t) => [t.tunnelId, t]));
    const cluster = this.cluster;
    if (cluster) {
      const body = JSON.stringify({ principalKey, createdAfterMs });
      const answers = await Promise.all(
        cluster.otherNodes().map((node) =>
          Promise.race([cluster.request(node, "tunnels", body), Bun.sleep(CLUSTER_LIST_TIMEOUT_MS).then(() => "[]")]).catch((err) => {
            log.warn("cluster: a node did not list its tunnels", { node, err: errorMessage(err) });
            return "[]";
          }),
        ),
      );
      for (const answer of answers) {
        for (const t of JSON.parse(answer) as OpenTunnel[]) {
          const known = byId.get(t.tunnelId);
          if (!known || (known.expiresAtMs !== null && t.expiresAtMs === null)) byId.set(t.tunnelId, t);
        }
      }
    }
    return [...byId.values()].sort((a, b) => a.createTimeMs - b.createTimeMs);
  }

  created(t: OpenTunnel): void {
    if (this.tunnels.size > 50_000) this.sweep(Date.now());
    this.tunnels.set(t.tunnelId, t);
  }

  /** Its socket opened here; `details` records a tunnel another node of the cluster created. */
  connected(tunnelId: string, details?: Omit<OpenTunnel, "tunnelId" | "expiresAtMs">): void {
    const t = this.tunnels.get(tunnelId);
    if (t) t.expiresAtMs = null;
    else if (details) this.created({ ...details, tunnelId, expiresAtMs: null });
  }

  closed(tunnelId: string): void {
    this.tunnels.delete(tunnelId);
  }

  private sweep(nowMs: number): void {
    for (const [id, t] of this.tunnels) if (t.expiresAtMs !== null && t.expiresAtMs <= nowMs) this.tunnels.delete(id);
  }

  /** The caller's own open tunnels created after a time (ms), oldest first. */
  list(principalKey: string, createdAfterMs: number, nowMs: number): OpenTunnel[] {
    this.sweep(nowMs);
    return [...this.tunnels.values()]
      .filter((t) => t.principalKey === principalKey && t.createTimeMs > createdAfterMs)
      .sort((a, b) => a.createTimeMs - b.createTimeMs);
  }
}
