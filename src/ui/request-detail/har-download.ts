import type { TracedEvent } from "~/lib/protocol/event.ts";

/** Saves events as a HAR 1.2 file download (entries built by the agent's one TracedEvent -> HAR converter). */
export function downloadHar(events: TracedEvent[], filename: string): void {
  const har = buildHar(events);
  const blob = new Blob([JSON.stringify(har, null, 2)], { type: "application/json" });
  const url = URL.createObjectURL(blob);
  const a = document.createElement("a");
  a.href = url;
  a.download = filename;
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

// Interim until src/agent/har.ts lands; replaced by a call to it.
export function buildHar(events: TracedEvent[]): { log: { version: string; creator: { name: string; version: string }; entries: unknown[] } } {
  return { log: { version: "1.2", creator: { name: "tapscope", version: "0" }, entries: events.map((e) => ({ _eventId: e.event_id })) } };
}
