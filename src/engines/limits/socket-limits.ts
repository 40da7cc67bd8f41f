/** The WebSocket channels; each counts against the same per-address and global caps. */
export type SocketKind = "publish" | "subscribe" | "tunnel" | "worker" | "linkPing";

export type SocketLimitsOptions = {
  /** Open WebSockets of every kind together: kept well below the descriptor limit, so HTTP stays answerable. */
  maxSockets: number;
  /** Open WebSockets of every kind from one client address (TRUST_PROXY decides the address). */
  perAddress: number;
  /** /api/PingLink sockets on one link, from every address together. */
  pingsPerLink: number;
};

/** A socket's place under the caps, given back once when it closes. */
export type SocketSlot = { release: () => void };

export type SocketAdmission = { ok: true; slot: SocketSlot } | { ok: false; reason: string };

/**
 * Counts the open WebSockets per client address, per link (link pings) and in all. A socket takes its place at
 * the upgrade and gives it back when it closes; one over a cap is refused with a reason that says which.
 */
export class SocketLimits {
  private total = 0;
  private readonly byAddress = new Map<string, number>();
  private readonly byLink = new Map<string, number>();

  constructor(readonly options: SocketLimitsOptions) {}

  /** Open sockets now, in all. */
  get open(): number {
    return this.total;
  }

  /** Open sockets now from one address. */
  openFrom(address: string): number {
    return this.byAddress.get(address) ?? 0;
  }

  admit(kind: SocketKind, address: string, linkId?: string): SocketAdmission {
    const o = this.options;
    if (this.total >= o.maxSockets) {
      return { ok: false, reason: "the server has too many open connections; try again later" };
    }
    if (this.openFrom(address) >= o.perAddress) {
      return { ok: false, reason: `too many open connections from this address (at most ${o.perAddress})` };
    }
    const linkKey = kind === "linkPing" ? (linkId ?? "") : null;
    if (linkKey !== null && (this.byLink.get(linkKey) ?? 0) >= o.pingsPerLink) {
      return { ok: false, reason: `too many open pages of this link (at most ${o.pingsPerLink})` };
    }
    this.total++;
    bump(this.byAddress, address, 1);
    if (linkKey !== null) bump(this.byLink, linkKey, 1);
    let isReleased = false;
    return {
      ok: true,
      slot: {
        release: () => {
          if (isReleased) return;
          isReleased = true;
          this.total--;
          bump(this.byAddress, address, -1);
          if (linkKey !== null) bump(this.byLink, linkKey, -1);
        },
      },
    };
  }
}

function bump(counts: Map<string, number>, key: string, by: number): void {
  const n = (counts.get(key) ?? 0) + by;
  if (n <= 0) counts.delete(key);
  else counts.set(key, n);
}

/** Bytes of memory an open WebSocket is counted at for the default global cap (its buffers and state). */
const bytesPerSocket = 16 * 1024;

/**
 * The default global cap: three quarters of the descriptor limit (the rest for HTTP, the database, files and the
 * store), and no more sockets than the sockets' share of MEMORY_LIMIT (memoryShares) holds at 16 KiB each.
 */
export function defaultMaxSockets(descriptorLimit: number, socketShareBytes: number): number {
  return Math.max(16, Math.min(Math.floor(descriptorLimit * 0.75), Math.floor(socketShareBytes / bytesPerSocket)));
}
