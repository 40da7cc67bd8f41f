import { toHarLog } from "~/lib/har.ts";
import type { TracedEvent } from "~/lib/protocol/event.ts";

/** Saves events as a HAR 1.2 download, built by the one TracedEvent -> HAR converter (lib/har.ts, browser-safe). */
export function downloadHar(events: readonly TracedEvent[], filename: string): void {
  const blob = new Blob([JSON.stringify(toHarLog(events), null, 2)], { type: "application/json" });
  const url = URL.createObjectURL(blob);
  const a = document.createElement("a");
  a.href = url;
  a.download = filename;
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}
