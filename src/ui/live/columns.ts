import { dbSystemShort, isDbCall } from "~/lib/db-call.ts";
import { isDecrypted, listUrl } from "~/lib/event-url.ts";
import type { TracedEvent } from "~/lib/protocol/event.ts";

/** The live list's columns, in the order a wide list shows them. */
export const columnIds = [
  "time",
  "status",
  "method",
  "protocol",
  "service",
  "url",
  "remote",
  "contentType",
  "requestSize",
  "size",
  "duration",
  "waterfall",
] as const;
export type ColumnId = (typeof columnIds)[number];

export type ColumnSpec = {
  id: ColumnId;
  label: string;
  /** Width in px on a wide list; the URL takes what is left. */
  width: number;
  /** Shown on a narrow list (a phone, or beside an open detail) and never hidden by the chooser. */
  isCore: boolean;
  isDefault: boolean;
  isRight?: boolean;
  /** The value the column sorts by; none for columns that do not sort. */
  sortKey?: (event: TracedEvent) => number | string;
};

export function protocolLabel(event: TracedEvent): string {
  if (event.protocol === "ws") return "WS";
  if (isDbCall(event)) return dbSystemShort(event.db_system);
  if (event.protocol === "tcp") return event.tls_server_name ? "TCP TLS" : "TCP";
  const tls = isDecrypted(event) ? " TLS" : "";
  if (event.http_req_content_type.startsWith("application/grpc")) return `gRPC${tls}`;
  return `${event.http_version === "2" ? "h2" : "h1"}${tls}`;
}

/** The other end of the exchange: the client of a request the program served, the server of a call it made. */
export function remoteAddress(event: TracedEvent): string {
  return event.http_is_outgoing ? event.http_server_addr : event.http_client_addr;
}

export function contentType(event: TracedEvent): string {
  const type = event.http_resp_content_type || event.http_req_content_type;
  return (type.split(";")[0] ?? "").trim();
}

export function responseSize(event: TracedEvent): number {
  if (event.protocol === "ws") return event.ws_size >= 0 ? event.ws_size : event.ws_wire_size;
  // A database call's result has no body: what came back is its bytes.
  return isDbCall(event) ? event.bytes_received : event.http_resp_body_size_bytes_wire;
}

export function requestSize(event: TracedEvent): number {
  return isDbCall(event) ? event.bytes_sent : event.http_req_body_size_bytes_wire;
}

export const columnSpecs: Record<ColumnId, ColumnSpec> = {
  time: { id: "time", label: "Time", width: 96, isCore: false, isDefault: true, sortKey: (e) => e.time },
  status: { id: "status", label: "Status", width: 52, isCore: true, isDefault: true, sortKey: (e) => e.http_resp_status_code },
  method: { id: "method", label: "Method", width: 60, isCore: true, isDefault: true, sortKey: (e) => e.http_req_method || e.protocol },
  protocol: { id: "protocol", label: "Protocol", width: 72, isCore: false, isDefault: false, sortKey: protocolLabel },
  service: { id: "service", label: "Service", width: 120, isCore: false, isDefault: false, sortKey: (e) => e.service },
  url: { id: "url", label: "URL", width: 0, isCore: true, isDefault: true, sortKey: listUrl },
  remote: { id: "remote", label: "Remote address", width: 140, isCore: false, isDefault: false, sortKey: remoteAddress },
  contentType: { id: "contentType", label: "Type", width: 130, isCore: false, isDefault: false, sortKey: contentType },
  requestSize: {
    id: "requestSize",
    label: "Req size",
    width: 72,
    isCore: false,
    isDefault: false,
    isRight: true,
    sortKey: requestSize,
  },
  size: { id: "size", label: "Size", width: 76, isCore: false, isDefault: true, isRight: true, sortKey: responseSize },
  duration: { id: "duration", label: "Duration", width: 88, isCore: true, isDefault: true, isRight: true, sortKey: (e) => e.http_duration },
  waterfall: { id: "waterfall", label: "Waterfall", width: 160, isCore: false, isDefault: false },
};

export const MIN_WIDTH = 40;
export const MAX_WIDTH = 600;

export type ColumnPrefs = { visible: ColumnId[]; widths: Partial<Record<ColumnId, number>> };

export const defaultPrefs = (): ColumnPrefs => ({ visible: columnIds.filter((id) => columnSpecs[id].isDefault), widths: {} });

const isColumnId = (value: unknown): value is ColumnId => typeof value === "string" && (columnIds as readonly string[]).includes(value);

/** Saved preferences read back: anything unknown or out of bounds is dropped, the core columns always stay. */
export function parsePrefs(text: string | null): ColumnPrefs {
  if (!text || text.length > 4096) return defaultPrefs();
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return defaultPrefs();
  }
  if (!value || typeof value !== "object") return defaultPrefs();
  const { visible, widths } = value as { visible?: unknown; widths?: unknown };
  const chosen = new Set(Array.isArray(visible) ? visible.filter(isColumnId) : defaultPrefs().visible);
  const kept: Partial<Record<ColumnId, number>> = {};
  if (widths && typeof widths === "object") {
    for (const [id, width] of Object.entries(widths)) {
      if (isColumnId(id) && typeof width === "number" && Number.isFinite(width)) kept[id] = clampWidth(width);
    }
  }
  return { visible: columnIds.filter((id) => columnSpecs[id].isCore || chosen.has(id)), widths: kept };
}

export const clampWidth = (width: number) => Math.round(Math.min(MAX_WIDTH, Math.max(MIN_WIDTH, width)));

/** Where a person's choice of columns is kept in this browser: one key per signed-in user, one for shared links. */
export function prefsKey(userKey: string | null): string {
  return `tapscope:live-columns:${userKey || "shared-links"}`;
}

export function loadPrefs(userKey: string | null): ColumnPrefs {
  try {
    return parsePrefs(window.localStorage.getItem(prefsKey(userKey)));
  } catch {
    return defaultPrefs();
  }
}

export function savePrefs(userKey: string | null, prefs: ColumnPrefs) {
  try {
    window.localStorage.setItem(prefsKey(userKey), JSON.stringify(prefs));
  } catch {
    // Storage full or refused (a private window): the choice lasts for this page only.
  }
}

/** The wide list's grid: each column its width, the URL the rest. */
export function gridTemplate(prefs: ColumnPrefs): string {
  return prefs.visible.map((id) => (id === "url" ? "minmax(8rem,1fr)" : `${prefs.widths[id] ?? columnSpecs[id].width}px`)).join(" ");
}

export type Sort = { column: ColumnId; isAscending: boolean } | null;

/** The next sort when a header is clicked: descending first, then ascending, then back to newest first. */
export function nextSort(current: Sort, column: ColumnId): Sort {
  if (current?.column !== column) return { column, isAscending: false };
  if (!current.isAscending) return { column, isAscending: true };
  return null;
}

/** The rows in display order: newest first, or by the chosen column (ties stay newest first). */
export function displayOrder(oldestFirst: readonly TracedEvent[], sort: Sort): TracedEvent[] {
  const rows = oldestFirst.slice().reverse();
  const key = sort ? columnSpecs[sort.column].sortKey : undefined;
  if (!sort || !key) return rows;
  const keys = new Map<TracedEvent, number | string>();
  for (const row of rows) keys.set(row, key(row));
  const sign = sort.isAscending ? 1 : -1;
  return rows.sort((a, b) => {
    const x = keys.get(a) ?? "";
    const y = keys.get(b) ?? "";
    return x < y ? -sign : x > y ? sign : 0;
  });
}
