import { AppError } from "~/lib/errors.ts";
import { eventFields, type FieldKind, type TracedEvent } from "~/lib/protocol/event.ts";

const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function isNamespaceId(value: unknown): value is string {
  return typeof value === "string" && uuidPattern.test(value);
}

/**
 * The one way a table name is made: from a validated namespace UUID, dashes removed (spec section 3).
 * Anything else is refused before it can reach SQL.
 */
export function tableName(namespaceId: string): string {
  if (!isNamespaceId(namespaceId)) throw new AppError("BAD_REQUEST", "invalid namespace id");
  return `events_${namespaceId.replaceAll("-", "").toLowerCase()}`;
}

const tablePattern = /^events_([0-9a-f]{32})$/;

/** The namespace id a table belongs to, or null for tables that are not ours. */
export function namespaceIdOfTable(name: string): string | null {
  const m = tablePattern.exec(name);
  if (!m?.[1]) return null;
  const h = m[1];
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

/** int: whole numbers (Int64 in storage); flag: booleans stored as 0/1; json: arrays/maps as JSON text. */
export type ColumnKind = FieldKind;

/** Storage layout shared by both engines, in table order: every TracedEvent field is one column (eventFields). */
export const eventColumns = eventFields;

export type EventColumn = (typeof eventColumns)[number][0];

export const columnKind: Record<string, ColumnKind> = Object.fromEntries(eventColumns);

/** A stored value back to its TracedEvent shape (engines hand back bigints, 0/1, JSON text). */
export function fromStored(kind: ColumnKind, value: unknown): unknown {
  switch (kind) {
    case "int":
      return value === null || value === undefined ? 0 : Number(value);
    case "flag":
      return value === true || value === 1 || value === "1" || value === 1n;
    case "json":
      try {
        return JSON.parse(String(value ?? "null")) ?? undefined;
      } catch {
        return undefined;
      }
    default:
      return value === null || value === undefined ? "" : String(value);
  }
}

export function rowToEvent(row: Record<string, unknown>): TracedEvent {
  const out: Record<string, unknown> = {};
  for (const [name, kind] of eventColumns) out[name] = fromStored(kind, row[name]);
  if (!Array.isArray(out.http_req_headers)) out.http_req_headers = [];
  if (!Array.isArray(out.http_resp_headers)) out.http_resp_headers = [];
  if (typeof out.tags !== "object" || out.tags === null || Array.isArray(out.tags)) out.tags = {};
  return out as TracedEvent;
}
