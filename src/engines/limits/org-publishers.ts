/**
 * Publishers connected now, per org: what the containers limit counts. In a cluster, `setRemote` adds the other server
 * nodes' counts (engines/cluster), so the limit holds across nodes within the broker's heartbeat.
 */
export class OrgPublishers {
  private readonly counts = new Map<string, number>();
  private remote: ReadonlyMap<string, number> = new Map();

  connected(orgId: string): void {
    this.counts.set(orgId, (this.counts.get(orgId) ?? 0) + 1);
  }

  disconnected(orgId: string): void {
    const n = (this.counts.get(orgId) ?? 0) - 1;
    if (n > 0) this.counts.set(orgId, n);
    else this.counts.delete(orgId);
  }

  count(orgId: string): number {
    return (this.counts.get(orgId) ?? 0) + (this.remote.get(orgId) ?? 0);
  }

  /** This node's own counts (what it tells the other nodes). */
  local(): ReadonlyMap<string, number> {
    return this.counts;
  }

  /** The other nodes' counts together, replacing the last ones. */
  setRemote(counts: ReadonlyMap<string, number>): void {
    this.remote = counts;
  }
}
