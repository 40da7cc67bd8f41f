import { useCallback, useEffect, useRef, useState } from "react";
import type { TracedEvent } from "~/lib/protocol/event.ts";

/** Why the list is held still: the user paused it, scrolled away from the top, or has the pointer over it. */
export type HoldReason = "user" | "scroll" | "pointer";

type Hold = Record<HoldReason, boolean> & {
  /** The rows exactly as they were on screen when the hold began; null while the list follows the stream. */
  rows: readonly TracedEvent[] | null;
  /** The store's count of added rows then, to say how many arrived since. */
  baseAdded: number;
};

const following: Hold = { user: false, scroll: false, pointer: false, rows: null, baseAdded: 0 };

/**
 * Holds the list still while any reason stands, the way DevTools keeps what the user looks at in place: the held
 * copy is the one last rendered (the store mutates in place, so a copy taken now could hold a row not yet drawn and
 * move everything under the pointer by one).
 */
export function useHold(renderedRows: readonly TracedEvent[], shownAdded: number) {
  const rendered = useRef({ rows: renderedRows, added: shownAdded });
  useEffect(() => {
    rendered.current = { rows: renderedRows, added: shownAdded };
  });
  const [hold, setHold] = useState<Hold>(following);

  const setReason = useCallback((reason: HoldReason, isOn: boolean) => {
    setHold((current) => {
      if (current[reason] === isOn) return current;
      const next = { ...current, [reason]: isOn };
      if (!(next.user || next.scroll || next.pointer)) return following;
      if (current.rows) return next;
      return { ...next, rows: rendered.current.rows, baseAdded: rendered.current.added };
    });
  }, []);

  const release = useCallback(() => setHold(following), []);

  /** Replaces a held copy (new filters, a new sort, a clear); a list that follows is left alone. */
  const setHeldRows = useCallback((make: () => readonly TracedEvent[], added: number) => {
    setHold((current) => (current.rows ? { ...current, rows: make(), baseAdded: added } : current));
  }, []);

  return { hold, isHeld: hold.rows !== null, setReason, release, setHeldRows };
}

/** The value, changed at most once per `ms` (0: at once). */
export function useThrottled<T>(value: T, ms: number): T {
  const [throttled, setThrottled] = useState(value);
  const lastAt = useRef(0);
  useEffect(() => {
    if (ms === 0) return;
    const wait = lastAt.current + ms - Date.now();
    const apply = () => {
      lastAt.current = Date.now();
      setThrottled(value);
    };
    if (wait <= 0) {
      apply();
      return;
    }
    const timer = setTimeout(apply, wait);
    return () => clearTimeout(timer);
  }, [value, ms]);
  return ms === 0 ? value : throttled;
}
