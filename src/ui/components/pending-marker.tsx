import { useEffect, useState } from "react";
import { formatDuration } from "~/lib/format.ts";

/** How often a pending row's wait is redrawn. */
const TICK_MS = 250;

/** The status cell of a request still waiting for its answer, DevTools' "(pending)" in a word that fits the column. */
export function PendingStatus() {
  return (
    <span
      data-pending="status"
      title="(pending): waiting for the response"
      className="rounded bg-amber-500/15 px-1 text-[10px] text-amber-300"
    >
      pending
    </span>
  );
}

/** The time a pending request has waited so far (`since`: its start in µs since the epoch), ticking. */
export function PendingWait({ since }: { since: number }) {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    const timer = setInterval(() => setNow(Date.now()), TICK_MS);
    return () => clearInterval(timer);
  }, []);
  const waited = Math.max(0, now * 1000 - since);
  return (
    <span data-pending="wait" title="Waited so far" className="text-amber-300/90">
      {formatDuration(waited)}
    </span>
  );
}
