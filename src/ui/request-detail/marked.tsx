import { useMemo } from "react";
import { markMatches } from "~/lib/filter/search.ts";

/** Text with the parts that match `terms` (any case) in <mark>: React text nodes, never markup. */
export function Marked({ text, terms }: { text: string; terms: readonly string[] }) {
  const parts = useMemo(() => (terms.length > 0 ? markMatches(text, terms) : null), [text, terms]);
  if (!parts) return <>{text}</>;
  return (
    <>
      {parts.map((part, i) =>
        part.isMatch ? (
          // biome-ignore lint/suspicious/noArrayIndexKey: the parts of one text in order
          <mark key={i} className="rounded-sm bg-amber-300/80 text-zinc-950">
            {part.text}
          </mark>
        ) : (
          part.text
        ),
      )}
    </>
  );
}
