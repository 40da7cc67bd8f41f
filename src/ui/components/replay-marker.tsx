import type { TracedEvent } from "~/lib/protocol/event.ts";

/** A list row's mark for a request sent again with Resend (its `replay_of` names the original). */
export function ReplayMarker({ event }: { event: Partial<Pick<TracedEvent, "replay_of">> }) {
  if (!event.replay_of) return null;
  return (
    <span title="Sent again with Resend" className="mr-1 shrink-0 rounded bg-violet-500/15 px-1 text-[10px] text-violet-300">
      <span aria-hidden="true">replay</span>
      <span className="sr-only">Sent again with Resend</span>
    </span>
  );
}
