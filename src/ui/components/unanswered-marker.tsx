import { formatDuration } from "~/lib/format.ts";
import { type TracedEvent, type UnansweredReason, unansweredReasons } from "~/lib/protocol/event.ts";

type UnansweredFields = Partial<Pick<TracedEvent, "http_unanswered" | "http_duration">>;

const labels: Record<UnansweredReason, { short: string; what: string }> = {
  client_aborted: { short: "aborted", what: "the client gave up" },
  server_closed: { short: "closed", what: "the server closed the connection" },
  reset: { short: "reset", what: "the connection was reset" },
};

function labelOf(reason: string): { short: string; what: string } {
  const known = unansweredReasons.find((r) => r === reason);
  return known ? labels[known] : { short: "no answer", what: "it ended" };
}

/** "No response: the client gave up after 2.00s"; "" for an answered request. */
export function unansweredSentence(event: UnansweredFields): string {
  if (!event.http_unanswered) return "";
  return `No response: ${labelOf(event.http_unanswered).what} after ${formatDuration(event.http_duration ?? 0)}`;
}

/** A list row's mark for a request that got no answer: why, in a word; the sentence on hover and for screen readers. */
export function UnansweredMarker({ event }: { event: UnansweredFields }) {
  if (!event.http_unanswered) return null;
  const sentence = unansweredSentence(event);
  return (
    <span
      title={sentence}
      data-unanswered={event.http_unanswered}
      className="mr-1 shrink-0 rounded bg-red-500/15 px-1 text-[10px] text-red-300"
    >
      <span aria-hidden="true">{labelOf(event.http_unanswered).short}</span>
      <span className="sr-only">{sentence}</span>
    </span>
  );
}
