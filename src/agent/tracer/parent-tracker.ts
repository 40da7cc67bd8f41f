/**
 * Which inbound request a process is serving, so an outbound call it makes meanwhile gets that request as its
 * parent. Per process, the requests in flight, oldest first; the newest is taken as the parent, since a server
 * usually makes its calls for the request it read last.
 */
export class ParentTracker<Request extends { eventId: string } = { eventId: string }> {
  private readonly requests = new Map<number, Request[]>();

  /** The event id of the newest inbound request in flight in `pid`; "" when none. */
  current(pid: number): string {
    const list = this.requests.get(pid);
    return list && list.length > 0 ? list[list.length - 1]!.eventId : "";
  }

  /** How many inbound requests `pid` has in flight: more than one makes `current` a guess. */
  inflight(pid: number): number {
    return this.requests.get(pid)?.length ?? 0;
  }

  /** The newest request of `pid` in flight and how many it has. */
  parent(pid: number): { id: string; candidates: number } {
    const list = this.requests.get(pid);
    return list && list.length > 0 ? { id: list[list.length - 1]!.eventId, candidates: list.length } : { id: "", candidates: 0 };
  }

  /** An inbound request of `pid` started. */
  start(pid: number, request: Request): void {
    const list = this.requests.get(pid);
    if (list) list.push(request);
    else this.requests.set(pid, [request]);
  }

  /** An inbound request of `pid` finished (answered, or its connection gone). */
  finish(pid: number, request: Request): void {
    const list = this.requests.get(pid);
    if (!list) return;
    const i = list.lastIndexOf(request);
    if (i >= 0) list.splice(i, 1);
    if (list.length === 0) this.requests.delete(pid);
  }

  /** Processes with a request in flight (tests, leak checks). */
  get processes(): number {
    return this.requests.size;
  }
}
