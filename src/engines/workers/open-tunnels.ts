import type { ClusterNode } from "~/engines/cluster/cluster-node.ts";
import { errorMessage } from "~/lib/errors.ts";
import type { OpenTunnel } from "~/lib/protocol/cluster.ts";
import { log } from "~/lib/server/logger.ts";

/** How long ListOpenTunnels waits for the other nodes of a cluster. */
const CLUSTER_LIST_TIMEOUT_MS = 2_000;

/**
 * Tunnels created and not yet expired unredeemed or closed: this process's, and in a cluster every node's (a tunnel is
 * created on one node and its socket may land on another, which then holds it).
 */
export class OpenTunnels {
  private readonly tunnels = new Map<string, OpenTunnel>();

  constructor(
    private readonly deps: {
      /** The runtime's clock (ms): tickets' expiry is set by it. */
      now: () => number;
      /** With a broker: this node of the cluster, which answers the others' ListOpenTunnels from here. */
      cluster?: ClusterNode | null;
    },
  ) {
    deps.cluster?.calls.handle("tunnels", async ({ principalKey, createdAfterMs }) => this.list(principalKey, createdAfterMs, deps.now()));
  }

  /** list, over every node of the cluster (those that answer within two seconds); a connected entry wins over a pending one. */
  async listEverywhere(principalKey: string, createdAfterMs: number, nowMs: number): Promise<OpenTunnel[]> {
    const byId = new Map(this.list(principalKey, createdAfterMs, nowMs).map((t) => [t.tunnelId, t]));
    const cluster = this.deps.cluster;
    if (cluster) {
      const none: OpenTunnel[] = [];
      const answers = await Promise.all(
        cluster.otherNodes().map((node) =>
          Promise.race([
            cluster.calls.request(node, "tunnels", { principalKey, createdAfterMs }),
            Bun.sleep(CLUSTER_LIST_TIMEOUT_MS).then(() => none),
          ]).catch((err) => {
            log.warn("cluster: a node did not list its tunnels", { node, err: errorMessage(err) });
            return none;
          }),
        ),
      );
      for (const answer of answers) {
        for (const t of answer) {
          const known = byId.get(t.tunnelId);
          if (!known || (known.expiresAtMs !== null && t.expiresAtMs === null)) byId.set(t.tunnelId, t);
        }
      }
    }
    return [...byId.values()].sort((a, b) => a.createTimeMs - b.createTimeMs);
  }

  created(t: OpenTunnel): void {
    if (this.tunnels.size > 50_000) this.sweep(this.deps.now());
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
