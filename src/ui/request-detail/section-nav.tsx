import { type ReactNode, type RefObject, useCallback, useEffect, useRef, useState } from "react";

export type DetailSection = { id: string; title: string; content: ReactNode };

/**
 * The detail's sections as tabs: each jumps to its section in the one scrolling column (so a search's marks, the
 * culprit and every table stay on one page), and the one being read is marked current. On a phone the bar wraps
 * rather than run off the screen.
 */
export function SectionNav({ sections, scroller }: { sections: readonly DetailSection[]; scroller: RefObject<HTMLDivElement | null> }) {
  const [current, setCurrent] = useState(sections[0]?.id ?? "");
  // The scroll a jump causes keeps the section jumped to current, even where it cannot reach the top.
  const jumped = useRef(false);
  const ids = sections.map((s) => s.id).join(" ");
  // biome-ignore lint/correctness/useExhaustiveDependencies: the sections are read from the page by their ids
  useEffect(() => {
    const box = scroller.current;
    if (!box) return;
    const onScroll = () => {
      if (jumped.current) {
        jumped.current = false;
        return;
      }
      const top = box.getBoundingClientRect().top;
      let at = sections[0]?.id ?? "";
      for (const section of sections) {
        const el = box.querySelector(`[data-section="${section.id}"]`);
        if (el && el.getBoundingClientRect().top - top <= 8) at = section.id;
      }
      // At the bottom the last sections may never reach the top: the last one is being read.
      if (box.scrollTop > 0 && box.scrollTop + box.clientHeight >= box.scrollHeight - 2) at = sections.at(-1)?.id ?? at;
      setCurrent(at);
    };
    box.addEventListener("scroll", onScroll, { passive: true });
    return () => box.removeEventListener("scroll", onScroll);
  }, [ids, scroller]);
  const jump = useCallback(
    (id: string) => {
      const box = scroller.current;
      const el = box?.querySelector<HTMLElement>(`[data-section="${id}"]`);
      if (!box || !el) return;
      const top = Math.min(
        box.scrollHeight - box.clientHeight,
        box.scrollTop + el.getBoundingClientRect().top - box.getBoundingClientRect().top - 4,
      );
      jumped.current = Math.round(top) !== Math.round(box.scrollTop);
      box.scrollTo?.({ top });
      setCurrent(id);
    },
    [scroller],
  );
  if (sections.length < 2) return null;
  return (
    <nav aria-label="Sections" className="border-b border-zinc-800">
      <ul className="flex flex-wrap px-2">
        {sections.map((section) => (
          <li key={section.id} className="shrink-0">
            <button
              type="button"
              aria-current={current === section.id ? "true" : undefined}
              onClick={() => jump(section.id)}
              className={`border-b-2 px-2.5 py-1.5 text-xs font-medium whitespace-nowrap ${
                current === section.id ? "border-sky-400 text-zinc-100" : "border-transparent text-zinc-400 hover:text-zinc-100"
              }`}
            >
              {section.title}
            </button>
          </li>
        ))}
      </ul>
    </nav>
  );
}
