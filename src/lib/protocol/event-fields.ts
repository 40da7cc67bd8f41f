/**
 * What a row of the event's field table says, the type a table gives its events, and the lists every consumer reads
 * from it. The table itself is `eventFieldTable` in event.ts; docs/adr/0030-event-field-table.md says why it is shaped
 * so. Each consumer (the publish codec, the validators, the stores, the queries, the export) turns these lists into
 * its own arrays once, when its module loads or its factory runs, never per event.
 */

/** How a field is carried, checked and kept. */
export type FieldType =
  /** Microseconds since the Unix epoch; an event without a valid one is refused. One per table. */
  | "time"
  /** The event's UUID, kept lower-case; an event without one is refused. One per table. */
  | "id"
  /** The event's kind, one of the row's `values` (the first when absent); another value refuses the event. One per table. */
  | "kind"
  /** Text, cut to `max` characters (the truncation marker included). */
  | "text"
  /** A whole number, clamped to `min`..`max`; `absent` when missing (0 unless given). */
  | "int"
  | "flag"
  /** A kept body sample: bytes on the publish wire, base64 text everywhere else; `cutFlag` is set when it was cut. */
  | "body"
  /** Name/value pairs in wire order. */
  | "headers"
  /** A map of strings. */
  | "tags";

export type FieldSpec = {
  /** The name everywhere: the event's key, the publish column, the stored column. */
  readonly name: string;
  readonly type: FieldType;
  /** text: the most characters kept; int: the largest value kept. */
  readonly max?: number;
  /** int: the smallest value kept. */
  readonly min?: number;
  /** int: the value of an event that does not carry the field, and of rows stored before its column existed. */
  readonly absent?: number;
  /** kind: the event kinds, the neutral one first. */
  readonly values?: readonly string[];
  /** body: the flag field set when the body was cut to the publish limit. */
  readonly cutFlag?: string;
  /** Values rarely repeat between events (ids, paths, addresses): the batch encoder appends them without a lookup. */
  readonly isUnique?: boolean;
  /** The explorer's clauses may name it: Number clauses for int and flag fields, String clauses for text, id and kind. */
  readonly isQueryable?: boolean;
  /**
   * Where a query's rows show it: "export" in every result row and in the JSON export (`tapscope query --format json`:
   * the product's documented columns); "rows" in result rows only. Absent: only in whole events (detail, HAR, live).
   */
  readonly shown?: "export" | "rows";
  /** The filter language's readable name for it (`request.method`). */
  readonly filter?: string;
};

type ValueOf<F extends FieldSpec> = F extends { type: "kind"; values: ReadonlyArray<infer V> }
  ? V
  : F extends { type: "time" | "int" }
    ? number
    : F extends { type: "flag" }
      ? boolean
      : F extends { type: "headers" }
        ? Array<[string, string]>
        : F extends { type: "tags" }
          ? Record<string, string>
          : string;

/** The event a table describes: one key per row, of the row's type. */
export type EventOf<Rows extends readonly FieldSpec[]> = { -readonly [F in Rows[number] as F["name"]]: ValueOf<F> };

/** The names of the rows that match `Match` (`{ type: "body" }`, `{ isQueryable: true }`). */
export type FieldNames<Rows extends readonly FieldSpec[], Match> = Extract<Rows[number], Match>["name"];

/** How a field is stored: int, whole numbers; flag, 0/1; string, text; json, header lists and tags as JSON text. */
export type StoredType = "int" | "flag" | "string" | "json";

const storedTypes: Record<FieldType, StoredType> = {
  time: "int",
  id: "string",
  kind: "string",
  text: "string",
  int: "int",
  flag: "flag",
  body: "string",
  headers: "json",
  tags: "json",
};

export const storedType = (field: FieldSpec): StoredType => storedTypes[field.type];

/** The value of a field an event does not carry (headers and tags: a new empty list or map each time). */
export function neutralValue(field: FieldSpec): unknown {
  switch (field.type) {
    case "time":
    case "int":
      return field.absent ?? 0;
    case "flag":
      return false;
    case "kind":
      return field.values?.[0] ?? "";
    case "headers":
      return [];
    case "tags":
      return {};
    default:
      return "";
  }
}

/** The lists derived from one field table, in table order. */
export type EventFields = {
  readonly rows: readonly FieldSpec[];
  readonly names: readonly string[];
  readonly byName: ReadonlyMap<string, FieldSpec>;
  /** The rows with the time, the event id and the event kind. */
  readonly time: FieldSpec;
  readonly id: FieldSpec;
  readonly kind: FieldSpec & { values: readonly string[] };
  /** The columns the explorer's clauses may name, by clause type. */
  readonly numberClauseColumns: readonly string[];
  readonly stringClauseColumns: readonly string[];
  /** What a result row may hold: time and event_id first (every row has them), then table order. */
  readonly rowColumns: readonly string[];
  /** What the JSON export prints, in table order. */
  readonly exportColumns: readonly string[];
  /** The filter language's readable names and the columns they read. */
  readonly filterColumns: ReadonlyMap<string, string>;
};

const fieldName = /^[a-z][a-z0-9_]*$/;

/**
 * The lists of one table, after checking it: a table that breaks a rule fails here, when the module that holds it
 * loads, with the rule it broke.
 */
export function deriveEventFields(rows: readonly FieldSpec[]): EventFields {
  const fail = (message: string): never => {
    throw new Error(`event field table: ${message}`);
  };
  const byName = new Map<string, FieldSpec>();
  const filterColumns = new Map<string, string>();
  for (const f of rows) {
    if (!fieldName.test(f.name)) fail(`${f.name} is not a lower-case snake_case name`);
    if (byName.has(f.name)) fail(`${f.name} appears twice`);
    byName.set(f.name, f);
    if (f.type === "text" && !(Number.isSafeInteger(f.max) && (f.max ?? 0) > 0)) fail(`text field ${f.name} needs its limit (max)`);
    if (f.type === "int") {
      const { min, max, absent = 0 } = f;
      if (!(Number.isFinite(min) && Number.isFinite(max))) fail(`int field ${f.name} needs its range (min, max)`);
      if (absent < (min ?? 0) || absent > (max ?? 0)) fail(`int field ${f.name}: absent lies outside min..max`);
    }
    if (f.type === "kind" && !f.values?.length) fail(`kind field ${f.name} needs its values`);
    if (f.isQueryable && !["id", "kind", "text", "int", "flag"].includes(f.type))
      fail(`${f.name}: a ${f.type} field cannot be a clause column`);
    if (f.filter !== undefined) {
      if (filterColumns.has(f.filter)) fail(`filter name ${f.filter} appears twice`);
      filterColumns.set(f.filter, f.name);
    }
  }
  for (const f of rows) {
    if (f.type === "body" && byName.get(f.cutFlag ?? "")?.type !== "flag") fail(`body field ${f.name} needs a flag field as its cutFlag`);
  }
  const one = (type: FieldType): FieldSpec => {
    const found = rows.filter((f) => f.type === type);
    return found.length === 1 ? (found[0] as FieldSpec) : fail(`needs exactly one ${type} field, has ${found.length}`);
  };
  const time = one("time");
  const id = one("id");
  const kind = one("kind") as FieldSpec & { values: readonly string[] };
  const isNumber = (f: FieldSpec) => f.type === "int" || f.type === "flag";
  return {
    rows,
    names: rows.map((f) => f.name),
    byName,
    time,
    id,
    kind,
    numberClauseColumns: rows.filter((f) => f.isQueryable && isNumber(f)).map((f) => f.name),
    stringClauseColumns: rows.filter((f) => f.isQueryable && !isNumber(f)).map((f) => f.name),
    rowColumns: [time.name, id.name, ...rows.filter((f) => f.shown && f !== time && f !== id).map((f) => f.name)],
    exportColumns: rows.filter((f) => f.shown === "export").map((f) => f.name),
    filterColumns,
  };
}

/**
 * A fresh event with every field neutral: what a producer starts from, so a field it does not fill needs no line in
 * it. The scalars are copied from one template (one object shape), the lists and maps are new.
 */
export function neutralEventOf<E>(fields: EventFields): () => E {
  const template: Record<string, unknown> = {};
  const containers = fields.rows.filter((f) => f.type === "headers" || f.type === "tags");
  for (const f of fields.rows) template[f.name] = neutralValue(f);
  return () => {
    const event: Record<string, unknown> = { ...template };
    for (const f of containers) event[f.name] = neutralValue(f);
    return event as E;
  };
}
