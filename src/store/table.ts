import { createHash } from "node:crypto";
import { AppError } from "~/lib/errors.ts";
import { eventFields, type FieldKind, type TracedEvent } from "~/lib/protocol/event.ts";
import { isUuid } from "~/lib/server/ids.ts";

/**
 * The one way a table name is made: from a validated namespace UUID, dashes removed.
 * Anything else is refused before it can reach SQL.
 */
export function tableName(namespaceId: string): string {
  if (!isUuid(namespaceId)) throw new AppError("BAD_REQUEST", "invalid namespace id");
  return `events_${namespaceId.replaceAll("-", "").toLowerCase()}`;
}

/**
 * The storage id of a shared link's events (kept in a cluster, so a late viewer on any node sees them): a UUID derived
 * from the link id, so its table is made by tableName like a namespace's. No namespace has it, so no namespace query
 * reaches it; retention treats it as a table without a namespace (the strictest days).
 */
export function linkStoreId(linkId: string): string {
  const h = createHash("sha256").update(`tapscope link ${linkId}`).digest("hex");
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-5${h.slice(13, 16)}-a${h.slice(17, 20)}-${h.slice(20, 32)}`;
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

/**
 * Columns added after tables were first made, with the value their old rows get. They are last in eventColumns, so a
 * table made before them and given them by ALTER TABLE ... ADD COLUMN has the same column order as a new one.
 */
export const addedColumns: ReadonlyArray<{ name: EventColumn; kind: ColumnKind; fill: number }> = [
  { name: "timing_tls", kind: "int", fill: -1 },
];

/** The added columns a table with these columns lacks. */
export function missingColumns(existing: Iterable<string>): typeof addedColumns {
  const have = new Set(existing);
  return addedColumns.filter((c) => !have.has(c.name));
}

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

/**
 * Events as both engines insert them: one array per column in eventColumns order (numbers for int and flag
 * columns, text for string columns, JSON text for json columns), rows oldest first within the chunk. The store
 * sink turns events into this form as they arrive and holds it while they wait for their insert: a few dozen arrays
 * per chunk instead of dozens of objects per event, which the garbage collector would otherwise trace again and
 * again for the second or two they wait (bench/store/rows.ts).
 */
export type EventRows = {
  readonly count: number;
  readonly columns: ReadonlyArray<number[] | string[]>;
  /** Each row's characters in the column texts an insert joins (text exactly, numbers counted as 16). */
  readonly sizes: readonly number[];
};

const isNumberColumn = eventColumns.map(([, kind]) => kind === "int" || kind === "flag");
const numberColumnCount = isNumberColumn.filter(Boolean).length;

export function isTextColumn(column: number): boolean {
  return !isNumberColumn[column];
}

/** The stored form of these events (see EventRows); never throws, whatever the fields hold. */
export function toEventRows(events: readonly TracedEvent[]): EventRows {
  let sorted = events;
  for (let i = 1; i < events.length; i++) {
    if ((events[i] as TracedEvent).time < (events[i - 1] as TracedEvent).time) {
      sorted = [...events].sort((a, b) => a.time - b.time);
      break;
    }
  }
  const n = sorted.length;
  const sizes = new Array<number>(n).fill(16 * numberColumnCount);
  const columns = eventColumns.map(([name, kind]): number[] | string[] => {
    if (kind === "int" || kind === "flag") {
      const numbers = new Array<number>(n);
      for (let i = 0; i < n; i++) {
        const v = (sorted[i] as TracedEvent)[name];
        numbers[i] = kind === "int" ? Math.trunc(Number(v) || 0) : v ? 1 : 0;
      }
      return numbers;
    }
    const texts = new Array<string>(n);
    for (let i = 0; i < n; i++) {
      const v = (sorted[i] as TracedEvent)[name];
      const text = kind === "json" ? JSON.stringify(v ?? null) : typeof v === "string" ? v : String(v ?? "");
      texts[i] = text;
      sizes[i] = (sizes[i] as number) + text.length;
    }
    return texts;
  });
  return { count: n, columns, sizes };
}

/** Rows start (inclusive) to end (exclusive) of a chunk. */
export function sliceRows(rows: EventRows, start: number, end: number): EventRows {
  if (start === 0 && end >= rows.count) return rows;
  return {
    count: Math.max(0, Math.min(end, rows.count) - start),
    columns: rows.columns.map((values) => values.slice(start, end)) as Array<number[] | string[]>,
    sizes: rows.sizes.slice(start, end),
  };
}

/** The events back from their stored form (rows for a remote worker, whose insert frame carries events). */
export function eventsOfRows(chunks: readonly EventRows[]): TracedEvent[] {
  const events: TracedEvent[] = [];
  for (const rows of chunks) {
    for (let i = 0; i < rows.count; i++) {
      const row: Record<string, unknown> = {};
      eventColumns.forEach(([name], j) => {
        row[name] = (rows.columns[j] as Array<number | string>)[i];
      });
      events.push(rowToEvent(row));
    }
  }
  return events;
}
