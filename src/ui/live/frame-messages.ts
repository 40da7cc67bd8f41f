/**
 * postMessage between a page and its live frame (/iframer): the page sends setFilters;
 * the frame answers markApplied or setFilterError and reports each event with onEvent, and says when its
 * request detail opens or closes (detailOpen), so a phone-sized page can give the frame the whole screen, and how many
 * programs publish to it and whether it has any request (stats), so the page can say how to connect one.
 * Both sides accept messages only from their own origin and from the expected window.
 */
export type SetFiltersMessage = { type: "setFilters"; revision: number; filters: string[] };

/** A short summary of an event: enough for a page to count, flash or link to it, without the bodies. */
export type EventSummary = {
  eventId: string;
  time: number;
  method: string;
  path: string;
  status: number;
  duration: number;
  isOutgoing: boolean;
};

export type FrameMessage =
  | { type: "markApplied"; revision: number }
  | { type: "setFilterError"; revision: number; message: string; position: number; index: number }
  | { type: "onEvent"; event: EventSummary }
  | { type: "detailOpen"; isOpen: boolean }
  | { type: "stats"; numPublishers: number; hasEvents: boolean };

/** Same origin, and from the window we expect (the parent for the frame, the iframe for the page). */
export function isTrustedMessage(event: MessageEvent, expectedSource: MessageEventSource | null | undefined): boolean {
  return event.origin === window.location.origin && expectedSource != null && event.source === expectedSource;
}

export function parseSetFilters(data: unknown): SetFiltersMessage | null {
  if (typeof data !== "object" || data === null) return null;
  const msg = data as Record<string, unknown>;
  if (msg.type !== "setFilters") return null;
  if (typeof msg.revision !== "number" || !Number.isSafeInteger(msg.revision)) return null;
  if (!Array.isArray(msg.filters) || !msg.filters.every((f) => typeof f === "string")) return null;
  return { type: "setFilters", revision: msg.revision, filters: msg.filters as string[] };
}

export function parseFrameMessage(data: unknown): FrameMessage | null {
  if (typeof data !== "object" || data === null) return null;
  const msg = data as Record<string, unknown>;
  if (msg.type === "markApplied" && typeof msg.revision === "number") return { type: "markApplied", revision: msg.revision };
  if (msg.type === "setFilterError" && typeof msg.revision === "number" && typeof msg.message === "string") {
    return {
      type: "setFilterError",
      revision: msg.revision,
      message: msg.message,
      position: typeof msg.position === "number" ? msg.position : 0,
      index: typeof msg.index === "number" ? msg.index : 0,
    };
  }
  if (msg.type === "onEvent" && typeof msg.event === "object" && msg.event !== null) {
    return { type: "onEvent", event: msg.event as EventSummary };
  }
  if (msg.type === "detailOpen" && typeof msg.isOpen === "boolean") return { type: "detailOpen", isOpen: msg.isOpen };
  if (msg.type === "stats" && Number.isSafeInteger(msg.numPublishers) && typeof msg.hasEvents === "boolean") {
    return { type: "stats", numPublishers: msg.numPublishers as number, hasEvents: msg.hasEvents };
  }
  return null;
}

/** The error text the page shows under its filter input. */
export function filterErrorText(message: string, position: number): string {
  return `${message} (at character ${position + 1})`;
}
