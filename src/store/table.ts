import { createHash } from "node:crypto";
import { AppError } from "~/lib/errors.ts";
import { eventFields, type TracedEvent } from "~/lib/protocol/event.ts";
import { type EventFields, type FieldSpec, neutralValue, type StoredType, storedType } from "~/lib/protocol/event-fields.ts";
import { eventBuilder } from "~/lib/protocol/validate-event.ts";
import { isUuid } from "~/lib/server/ids.ts";
import { type StoredOnceColumn, storedOnceColumns } from "./stored-body.ts";

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

type StoredColumn = {
  readonly name: string;
  readonly type: StoredType;
  readonly field: FieldSpec;
  /** Its value in rows stored before it existed: the field's neutral value, stored. */
  readonly fill: number | string;
};

/**
 * A field table's storage layout, shared by both engines: one column per field, in table order (the engines add
 * their own, such as ClickHouse's `ts`). The stores take it from the table they are opened with (eventFields).
 */
export type StoreLayout = {
  readonly fields: EventFields;
  readonly columns: readonly StoredColumn[];
  readonly typeOf: ReadonlyMap<string, StoredType>;
  /** Per column: text (string and json columns) rather than numbers (int and flag). */
  readonly isText: readonly boolean[];
  /** The event of one row's values, in column order. */
  readonly build: (values: readonly unknown[]) => TracedEvent;
};

function storedValue(value: unknown): number | string {
  if (typeof value === "boolean") return value ? 1 : 0;
  return typeof value === "number" || typeof value === "string" ? value : JSON.stringify(value);
}

export function storeLayout(fields: EventFields): StoreLayout {
  const columns = fields.rows.map((field) => ({
    name: field.name,
    type: storedType(field),
    field,
    fill: storedValue(neutralValue(field)),
  }));
  return {
    fields,
    columns,
    typeOf: new Map(columns.map((c) => [c.name, c.type])),
    isText: columns.map((c) => c.type === "string" || c.type === "json"),
    build: eventBuilder(fields.names),
  };
}

/** The layout of eventFields: what the server stores. */
export const eventLayout: StoreLayout = storeLayout(eventFields);

/**
 * The columns a stored table lacks (it was made before their fields were added), to be added with ALTER TABLE ... ADD
 * COLUMN, filled with their fields' neutral values. Inserts and selects name their columns, so where a column sits in
 * a table does not matter, and a table may also hold columns this server does not know (a newer server added them:
 * every column has its neutral value as its default, so this server's inserts leave them to it).
 */
export function missingColumns(existing: Iterable<string>, layout: StoreLayout = eventLayout): StoredColumn[] {
  const have = new Set(existing);
  return layout.columns.filter((c) => !have.has(c.name));
}

/** A stored value back to its event shape (engines hand back bigints, 0/1, JSON text). */
export function fromStored(type: StoredType, value: unknown): unknown {
  switch (type) {
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

const isMap = (value: unknown) => typeof value === "object" && value !== null && !Array.isArray(value);

/** Per column that may be stored once (stored-body.ts), how. */
const storedOnceOf: ReadonlyMap<string, StoredOnceColumn> = new Map(storedOnceColumns.map((c) => [c.column, c]));

export function rowToEvent(row: Record<string, unknown>, layout: StoreLayout = eventLayout): TracedEvent {
  const { columns } = layout;
  const values = new Array<unknown>(columns.length);
  for (let j = 0; j < columns.length; j++) {
    const { name, type, field } = columns[j] as StoredColumn;
    const once = storedOnceOf.get(name);
    const value = once && row[name] === once.marker ? once.rebuild(row[once.text]) : fromStored(type, row[name]);
    values[j] = type !== "json" ? value : field.type === "headers" ? (Array.isArray(value) ? value : []) : isMap(value) ? value : {};
  }
  return layout.build(values);
}

/**
 * Events as both engines insert them: one array per column in the layout's order (numbers for int and flag
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

/** The stored form of these events (see EventRows); never throws, whatever the fields hold. */
export function toEventRows(events: readonly TracedEvent[], layout: StoreLayout = eventLayout): EventRows {
  let sorted = events;
  for (let i = 1; i < events.length; i++) {
    if ((events[i] as TracedEvent).time < (events[i - 1] as TracedEvent).time) {
      sorted = [...events].sort((a, b) => a.time - b.time);
      break;
    }
  }
  const n = sorted.length;
  const sizes = new Array<number>(n).fill(16 * layout.isText.filter((isText) => !isText).length);
  const columns = layout.columns.map(({ name, type }): number[] | string[] => {
    if (type === "int" || type === "flag") {
      const numbers = new Array<number>(n);
      for (let i = 0; i < n; i++) {
        const v = (sorted[i] as Record<string, unknown>)[name];
        numbers[i] = type === "int" ? Math.trunc(Number(v) || 0) : v ? 1 : 0;
      }
      return numbers;
    }
    const texts = new Array<string>(n);
    const once = storedOnceOf.get(name);
    const isOnce = once !== undefined && layout.typeOf.has(once.text);
    for (let i = 0; i < n; i++) {
      if (isOnce) {
        const text = once.stored(sorted[i] as TracedEvent, once.side);
        texts[i] = text;
        sizes[i] = (sizes[i] as number) + text.length;
        continue;
      }
      const v = (sorted[i] as Record<string, unknown>)[name];
      const text = type === "json" ? JSON.stringify(v ?? null) : typeof v === "string" ? v : String(v ?? "");
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
export function eventsOfRows(chunks: readonly EventRows[], layout: StoreLayout = eventLayout): TracedEvent[] {
  const events: TracedEvent[] = [];
  for (const rows of chunks) {
    for (let i = 0; i < rows.count; i++) {
      const row: Record<string, unknown> = {};
      layout.columns.forEach(({ name }, j) => {
        row[name] = (rows.columns[j] as Array<number | string>)[i];
      });
      events.push(rowToEvent(row, layout));
    }
  }
  return events;
}
