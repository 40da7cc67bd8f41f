import { LiveHub } from "~/engines/live/hub.ts";
import { benchEvent, benchFilters } from "./events.ts";

/**
 * The hub's own CPU cost, no sockets: `events` events (in messages of 50) to `subscribers` viewers with the bench
 * filters, each send accepted at once. CPU time, not wall time, so it holds on a busy machine.
 */
export function hubAlone(subscribers: number, events: number): { cpuMs: number; usPerEvent: number; mbSent: number } {
  const hub = new LiveHub();
  let bytes = 0;
  const transport = {
    send: (data: string) => {
      bytes += data.length;
      return data.length;
    },
    bufferedAmount: () => 0,
    close() {},
  };
  for (let k = 0; k < subscribers; k++) {
    const sub = hub.subscribe({ kind: "link", linkId: "bench" }, transport, { expiresAt: null });
    sub.setConfig({ type: "setConfig", revision: 1, filters: subscribers === 1 ? [] : benchFilters[k % benchFilters.length]! });
  }
  const all = Array.from({ length: events }, (_, i) => benchEvent(i, 0));
  const cpu0 = process.cpuUsage();
  for (let i = 0; i < all.length; i += 50) {
    hub.accept({ namespaceId: null, linkId: "bench" }, all.slice(i, i + 50));
    hub.flushAll();
  }
  const cpu = process.cpuUsage(cpu0);
  const cpuMs = (cpu.user + cpu.system) / 1000;
  return { cpuMs, usPerEvent: (cpuMs * 1000) / events, mbSent: bytes / 1e6 };
}
