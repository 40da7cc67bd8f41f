import type { TunnelRole } from "~/lib/protocol/tunnel.ts";

export type OpenTunnel = {
  tunnelId: string;
  principalKey: string;
  namespaceId: string;
  role: TunnelRole;
  createTimeMs: number;
  /** Until the ticket is redeemed: when it expires; while connected: null. */
  expiresAtMs: number | null;
};

/** Tunnels created and not yet expired unredeemed or closed (this process's). */
export class OpenTunnels {
  private readonly tunnels = new Map<string, OpenTunnel>();

  created(t: OpenTunnel): void {
    if (this.tunnels.size > 50_000) this.sweep(Date.now());
    this.tunnels.set(t.tunnelId, t);
  }

  connected(tunnelId: string): void {
    const t = this.tunnels.get(tunnelId);
    if (t) t.expiresAtMs = null;
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
