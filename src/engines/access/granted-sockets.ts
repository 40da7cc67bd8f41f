import { errorMessage } from "~/lib/errors.ts";
import { log } from "~/lib/server/logger.ts";
import { type Grant, grantEndedReason, grantKey, type SocketRevoker } from "~/services/access/grants.ts";

/** What the registry needs of an open socket. */
export type ClosableSocket = { close(code: number, reason: string): void };

/** What revoking services call: every socket standing on the grant closes now. */

/** The close code of a socket whose credential was revoked; the reason says which. */
export const REVOKED_CLOSE_CODE = 4401;

type Entry = { grants: Grant[]; socket: ClosableSocket };

/** How often every open socket's grants are checked again (revocations by any other path: expiry, direct edits). */
const DEFAULT_SWEEP_MS = 500;

/**
 * The open sockets of an app (publish, live, tunnel, worker), each under the grants that authorised it. A
 * revoking service closes a grant's sockets at once; a sweep re-checks every grant in a few batched queries,
 * and a socket that opens on a grant revoked since its ticket was issued is checked as soon as it registers.
 */
export class GrantedSockets implements SocketRevoker {
  private readonly entries = new Set<Entry>();
  private readonly byKey = new Map<string, Set<Entry>>();
  private fresh: Entry[] = [];
  private timer: ReturnType<typeof setInterval> | null = null;
  private isSweeping = false;

  constructor(
    private readonly deps: {
      findRevoked: (grants: Grant[]) => Promise<Set<string>>;
      sweepMs?: number;
    },
  ) {}

  /** Registers an open socket; call the returned function when it closes. A socket with no grants is not kept. */
  register(grants: Grant[], socket: ClosableSocket): () => void {
    if (grants.length === 0) return () => {};
    const entry: Entry = { grants, socket };
    this.entries.add(entry);
    for (const g of grants) {
      const key = grantKey(g);
      let set = this.byKey.get(key);
      if (!set) {
        set = new Set();
        this.byKey.set(key, set);
      }
      set.add(entry);
    }
    this.fresh.push(entry);
    if (this.fresh.length === 1) setTimeout(() => void this.checkFresh(), 0);
    this.timer ??= setInterval(() => void this.sweep(), this.deps.sweepMs ?? DEFAULT_SWEEP_MS);
    this.timer.unref?.();
    return () => this.forget(entry);
  }

  revoke(grant: Grant): void {
    const set = this.byKey.get(grantKey(grant));
    if (!set) return;
    for (const entry of [...set]) this.close(entry, grant);
  }

  get size(): number {
    return this.entries.size;
  }

  /** Checks every open socket's grants now (also on the timer). */
  async sweep(): Promise<void> {
    if (this.isSweeping || this.entries.size === 0) return;
    this.isSweeping = true;
    try {
      await this.check([...this.entries]);
    } finally {
      this.isSweeping = false;
    }
  }

  private async checkFresh(): Promise<void> {
    const entries = this.fresh;
    this.fresh = [];
    await this.check(entries.filter((e) => this.entries.has(e)));
  }

  private async check(entries: Entry[]): Promise<void> {
    if (entries.length === 0) return;
    const grants = new Map<string, Grant>();
    for (const e of entries) for (const g of e.grants) grants.set(grantKey(g), g);
    let revoked: Set<string>;
    try {
      revoked = await this.deps.findRevoked([...grants.values()]);
    } catch (err) {
      log.warn("could not re-check open sockets' credentials", { err: errorMessage(err) });
      return;
    }
    for (const key of revoked) {
      const grant = grants.get(key);
      if (grant) this.revoke(grant);
    }
  }

  private close(entry: Entry, grant: Grant): void {
    this.forget(entry);
    try {
      entry.socket.close(REVOKED_CLOSE_CODE, grantEndedReason[grant.kind]);
    } catch (err) {
      log.warn("could not close a revoked socket", { err: errorMessage(err) });
    }
  }

  private forget(entry: Entry): void {
    if (!this.entries.delete(entry)) return;
    for (const g of entry.grants) {
      const key = grantKey(g);
      const set = this.byKey.get(key);
      set?.delete(entry);
      if (set?.size === 0) this.byKey.delete(key);
    }
    if (this.entries.size === 0 && this.timer) {
      clearInterval(this.timer);
      this.timer = null;
    }
  }
}
