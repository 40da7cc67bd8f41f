/** Publishers connected now, per org: what the containers limit counts. */
export class OrgPublishers {
  private readonly counts = new Map<string, number>();

  connected(orgId: string): void {
    this.counts.set(orgId, (this.counts.get(orgId) ?? 0) + 1);
  }

  disconnected(orgId: string): void {
    const n = (this.counts.get(orgId) ?? 0) - 1;
    if (n > 0) this.counts.set(orgId, n);
    else this.counts.delete(orgId);
  }

  count(orgId: string): number {
    return this.counts.get(orgId) ?? 0;
  }
}
