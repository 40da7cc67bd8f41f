import { splitUrlTail } from "~/lib/event-url.ts";

/** One line of text shortened in the middle when it does not fit: the URL's last segment and query stay whole. */
export function MiddleCutText({ text, className = "text-zinc-300" }: { text: string; className?: string }) {
  const { head, tail } = splitUrlTail(text);
  return (
    <span className={`flex min-w-0 ${className}`} title={text} data-testid="call-url">
      <span className="truncate">{head}</span>
      <span className="max-w-full shrink-0 truncate whitespace-pre">{tail}</span>
    </span>
  );
}
