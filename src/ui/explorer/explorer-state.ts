import { clauseToFilterText } from "~/lib/filter/clause-text.ts";
import { parseFilter } from "~/lib/filter/parse.ts";
import {
  type Clause,
  defaultRowSort,
  maxRowLimit,
  maxRowOffset,
  numberClauseColumns,
  numberOps,
  type QueryFilter,
  type RowSort,
  type RowSortKey,
  rowSortKeys,
  stringClauseColumns,
  stringOps,
} from "~/lib/protocol/query.ts";
import { isAllowedRange, isValidFocus, type TimeRange } from "~/lib/time/range.ts";

/**
 * The explorer's whole state, as it lives in the `filter` query parameter: base64 of a
 * JSON object with the clauses, the global timestamp filter and the focused one, and the filter-language chips
 * (`text`). The explorer filters with the chips only; `clauses` come from links made by its old column editor and
 * are turned into chips when read. The display zone is the browser's one setting for every screen
 * (ui/lib/time-zone.ts), not the URL's: a `tz` in an older URL is ignored.
 */
export type ExplorerState = {
  clauses: Clause[];
  global: TimeRange;
  focus: TimeRange | null;
  text: string[];
};

type Wire = {
  clauses: Clause[];
  global: { lowerMs: number; upperMs: number };
  focus: { lowerMs: number; upperMs: number } | null;
  text?: string[];
};

function toBase64(text: string): string {
  const bytes = new TextEncoder().encode(text);
  let bin = "";
  for (const b of bytes) bin += String.fromCharCode(b);
  return btoa(bin);
}

function fromBase64(b64: string): string {
  const bin = atob(b64);
  const bytes = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
  return new TextDecoder("utf-8", { fatal: true }).decode(bytes);
}

export function encodeState(state: ExplorerState): string {
  const wire: Wire = {
    clauses: state.clauses,
    global: { lowerMs: state.global.startMs, upperMs: state.global.endMs },
    focus: state.focus ? { lowerMs: state.focus.startMs, upperMs: state.focus.endMs } : null,
  };
  if (state.text.length) wire.text = state.text;
  return toBase64(JSON.stringify(wire));
}

/** A wire range as a TimeRange, or null when it is not two numbers. */
function rangeOf(v: unknown): TimeRange | null {
  if (typeof v !== "object" || v === null) return null;
  const { lowerMs, upperMs } = v as Record<string, unknown>;
  return typeof lowerMs === "number" && typeof upperMs === "number" ? { startMs: lowerMs, endMs: upperMs } : null;
}

function isClause(v: unknown): v is Clause {
  if (typeof v !== "object" || v === null) return false;
  const c = v as Record<string, unknown>;
  if (c.type === "Number") {
    return (
      (numberClauseColumns as readonly unknown[]).includes(c.column) &&
      (numberOps as readonly unknown[]).includes(c.op) &&
      Number.isFinite(c.value)
    );
  }
  if (c.type === "String") {
    return (
      (stringClauseColumns as readonly unknown[]).includes(c.column) &&
      (stringOps as readonly unknown[]).includes(c.op) &&
      typeof c.value === "string"
    );
  }
  return false;
}

/**
 * The state a `filter` parameter holds, or null when it is missing or not ours (a hand-edited URL). A global
 * range the server would refuse (lib/time/bounds.ts: whole ms from 2000 to a day from now) falls back to the
 * default range; a focus outside the global range is dropped.
 */
export function decodeState(param: string | null, nowMs: number = Date.now()): ExplorerState | null {
  if (!param) return null;
  let wire: Partial<Wire>;
  try {
    wire = JSON.parse(fromBase64(param)) as Partial<Wire>;
  } catch {
    return null;
  }
  if (typeof wire !== "object" || wire === null) return null;
  const text = Array.isArray(wire.text) ? wire.text.filter((t): t is string => typeof t === "string").slice(0, 20) : [];
  // An old link's clauses become the chips that say the same, where the filter language can say it.
  const clauses: Clause[] = [];
  for (const clause of Array.isArray(wire.clauses) ? wire.clauses.filter(isClause) : []) {
    const chip = clauseToFilterText(clause);
    if (chip !== null && parseFilter(chip).ok && text.length < 20) {
      if (!text.includes(chip)) text.push(chip);
    } else clauses.push(clause);
  }
  const asked = rangeOf(wire.global);
  const global = asked && isAllowedRange(asked, nowMs) ? asked : defaultState(nowMs).global;
  const focus = global === asked ? rangeOf(wire.focus) : null;
  return {
    clauses,
    global,
    focus: focus && isValidFocus(global, focus) ? focus : null,
    text,
  };
}

export function defaultState(nowMs: number): ExplorerState {
  const endMs = Math.ceil(nowMs / 1000) * 1000;
  return {
    clauses: [],
    global: { startMs: endMs - 3_600_000, endMs },
    focus: null,
    text: [],
  };
}

/** The store's filter for this state: rows come from the focus when set (the store reads `focus`). */
export function toQueryFilter(state: ExplorerState, withFocus: boolean): QueryFilter {
  return {
    clauses: state.clauses,
    global: { lowerMs: state.global.startMs, upperMs: state.global.endMs },
    focus: withFocus && state.focus ? { lowerMs: state.focus.startMs, upperMs: state.focus.endMs } : null,
  };
}

/** The list's sort in the `sort` URL parameter, by the column's short name: `duration.desc`. */
const sortNames: Record<RowSortKey, string> = {
  time: "time",
  http_req_method: "method",
  http_resp_status_code: "status",
  http_req_path: "url",
  http_duration: "duration",
  http_resp_body_size_bytes_wire: "size",
};

export function encodeSort(sort: RowSort): string | null {
  if (sort.key === defaultRowSort.key && sort.dir === defaultRowSort.dir) return null;
  return `${sortNames[sort.key]}.${sort.dir}`;
}

/** The sort a `sort` parameter names; newest first when missing or not one of ours. */
export function decodeSort(param: string | null): RowSort {
  const [name, dir] = (param ?? "").split(".");
  const key = rowSortKeys.find((k) => sortNames[k] === name);
  return key && (dir === "asc" || dir === "desc") ? { key, dir } : defaultRowSort;
}

/** The deepest page of a sort the list reaches: the store skips at most maxRowOffset rows. */
export const maxPage = Math.floor(maxRowOffset / maxRowLimit) + 1;

/** The rows a page of the list skips: page 1 is the top of the sort. */
export const pageOffset = (page: number): number => (page - 1) * maxRowLimit;

/** The page a `page` parameter names (2 to maxPage); the first when missing or not one of ours. */
export function decodePage(param: string | null): number {
  const page = /^[1-9]\d{0,5}$/.test(param ?? "") ? Number(param) : 1;
  return page <= maxPage ? page : 1;
}

/** The `page` parameter of a page, or null for the first. */
export const encodePage = (page: number): string | null => (page > 1 ? String(page) : null);

/** An event id as a link carries it (`event`), or null. */
export function eventIdParam(param: string | null): string | null {
  return param && /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(param) ? param : null;
}

/** How much of the time around a linked request its link's range shows, each side. */
const linkMarginMs = 15 * 60_000;

/**
 * The URL of one stored request from the page at `href` (the explorer or /minified/): its range a half hour around
 * the request's time and no filters, so the request is in the list whatever the view was, and `event` opens it.
 */
export function requestLink(href: string, event: { event_id: string; time: number }): string {
  const url = new URL(href);
  const atMs = Math.floor(event.time / 1000);
  const global = { startMs: Math.floor((atMs - linkMarginMs) / 1000) * 1000, endMs: Math.ceil((atMs + linkMarginMs + 1) / 1000) * 1000 };
  url.hash = "";
  url.searchParams.set("filter", encodeState({ clauses: [], global, focus: null, text: [] }));
  url.searchParams.delete("sort");
  url.searchParams.delete("page");
  url.searchParams.set("event", event.event_id);
  return url.toString();
}
