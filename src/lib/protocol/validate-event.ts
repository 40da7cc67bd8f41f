import type { Result } from "~/lib/result.ts";
import { eventFields, type TracedEvent } from "./event.ts";
import type { EventFields, FieldSpec } from "./event-fields.ts";
import { cutText, publishLimits as L } from "./publish.ts";

/**
 * Published events crossed a socket from a program we do not control: every field is checked for its type and cut to
 * its size, as its row of the field table says. Missing fields get their neutral value (older and newer agents stay
 * compatible); a field of the wrong type, or a missing/invalid event id, time or kind, refuses the event. The server
 * runs these (ingest, a worker's inserts); the browser never loads this module.
 */
export type ValidationResult = Result<{ event: TracedEvent; truncated: number }>;

export const MAX_MICROS = 8_640_000_000_000_000_000; // Date's range in microseconds

export const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function isEventId(value: unknown): value is string {
  return typeof value === "string" && uuidPattern.test(value);
}

type Place = { name: string; at: number };
type Scalar = Place & { type: "text" | "int" | "flag"; max: number; min: number; absent: number };

/**
 * What both validators of one table work from, computed once per table: each field's place in the event and its
 * limits, grouped by type, and `build`, which makes the event from its values in table order.
 */
type EventChecks = {
  count: number;
  time: Place;
  id: Place;
  kind: Place & { values: readonly string[] };
  /** text, int and flag fields, in table order (the first of the wrong type names the refusal). */
  scalars: Scalar[];
  bodies: Array<Place & { flagAt: number }>;
  headers: Place[];
  tags: Place[];
  errors: { id: string; time: string; kind: string };
  build: (values: readonly unknown[]) => TracedEvent;
};

export function eventChecks(fields: EventFields): EventChecks {
  const at = new Map(fields.names.map((name, i) => [name, i]));
  const place = (f: FieldSpec): Place => ({ name: f.name, at: at.get(f.name)! });
  const ofType = (type: FieldSpec["type"]) => fields.rows.filter((f) => f.type === type).map(place);
  return {
    count: fields.rows.length,
    time: place(fields.time),
    id: place(fields.id),
    kind: { ...place(fields.kind), values: fields.kind.values },
    scalars: fields.rows
      .filter((f) => f.type === "text" || f.type === "int" || f.type === "flag")
      .map((f) => ({ ...place(f), type: f.type as Scalar["type"], max: f.max ?? 0, min: f.min ?? 0, absent: f.absent ?? 0 })),
    bodies: fields.rows.filter((f) => f.type === "body").map((f) => ({ ...place(f), flagAt: at.get(f.cutFlag!)! })),
    headers: ofType("headers"),
    tags: ofType("tags"),
    errors: {
      id: `${fields.id.name} must be a UUID`,
      time: `${fields.time.name} must be microseconds since the epoch`,
      kind: `${fields.kind.name} must be ${fields.kind.values.map((v) => `"${v}"`).join(" or ")}`,
    },
    build: eventBuilder(fields.names),
  };
}

/**
 * One object literal with the table's keys in order, made once per table: every event then has the same shape (the
 * JSON and binary paths and the store's rows alike), and a literal costs a third of what setting fifty keys one by
 * one does. The keys are
 * the table's own names (checked to be snake_case when it is derived), never anything from input. Server-only: the
 * pages' content security policy forbids making code, and they never load this module.
 */
export function eventBuilder(names: readonly string[]): (values: readonly unknown[]) => TracedEvent {
  const body = names.map((name, i) => `${JSON.stringify(name)}: v[${i}]`).join(", ");
  return new Function("v", `return { ${body} };`) as (values: readonly unknown[]) => TracedEvent;
}

/** The validator of one field table's events (validateEvent is eventFields'). */
export function eventValidator(fields: EventFields): (raw: unknown) => ValidationResult {
  const c = eventChecks(fields);
  const kinds: readonly unknown[] = c.kind.values;
  // Every place is written before each build, which copies the values out.
  const values = new Array<unknown>(c.count);
  return (raw) => {
    if (typeof raw !== "object" || raw === null || Array.isArray(raw)) return { ok: false, error: "event is not an object" };
    const input = raw as Record<string, unknown>;
    const id = input[c.id.name];
    if (!isEventId(id)) return { ok: false, error: c.errors.id };
    const time = input[c.time.name];
    // Stored as whole microseconds: a fraction below one would become 0.
    if (typeof time !== "number" || !Number.isFinite(time) || time < 1 || time > MAX_MICROS) return { ok: false, error: c.errors.time };
    const kind = input[c.kind.name] ?? kinds[0];
    if (!kinds.includes(kind)) return { ok: false, error: c.errors.kind };
    values[c.time.at] = Math.trunc(time);
    values[c.id.at] = id.toLowerCase();
    values[c.kind.at] = kind;

    let truncated = 0;
    for (const f of c.scalars) {
      const value = input[f.name];
      switch (f.type) {
        case "text":
          if (value === undefined || value === null) values[f.at] = "";
          else if (typeof value !== "string") return { ok: false, error: `${f.name} must be a string` };
          else if (value.length > f.max) {
            values[f.at] = cutText(value, f.max);
            truncated++;
          } else values[f.at] = value;
          break;
        case "int":
          if (value === undefined || value === null) values[f.at] = f.absent;
          else if (typeof value !== "number" || !Number.isFinite(value)) return { ok: false, error: `${f.name} must be a number` };
          else values[f.at] = Math.min(f.max, Math.max(f.min, Math.trunc(value)));
          break;
        case "flag":
          if (value === undefined || value === null) values[f.at] = false;
          else if (typeof value !== "boolean") return { ok: false, error: `${f.name} must be a boolean` };
          else values[f.at] = value;
          break;
      }
    }
    for (const f of c.bodies) {
      const value = input[f.name];
      if (value === undefined || value === null || value === "") {
        values[f.at] = "";
        continue;
      }
      if (typeof value !== "string") return { ok: false, error: `${f.name} must be a base64 string` };
      let kept = value;
      if (value.length > L.maxBodyChars) {
        // Cut on a base64 quantum so the kept part still decodes; the flag says it was cut.
        kept = value.slice(0, L.maxBodyChars - (L.maxBodyChars % 4));
        values[f.flagAt] = true;
        truncated++;
      }
      if (!BASE64.test(kept)) return { ok: false, error: `${f.name} must be base64` };
      values[f.at] = kept;
    }
    for (const f of c.headers) {
      const headers = validateHeaders(input[f.name], f.name);
      if (!headers.ok) return headers;
      values[f.at] = headers.headers;
      truncated += headers.truncated;
    }
    for (const f of c.tags) {
      const tags = validateTags(input[f.name], f.name);
      if (!tags.ok) return tags;
      values[f.at] = tags.tags;
      truncated += tags.truncated;
    }
    return { ok: true, event: c.build(values), truncated };
  };
}

export const validateEvent: (raw: unknown) => ValidationResult = eventValidator(eventFields);

function validateHeaders(value: unknown, name: string): Result<{ headers: Array<[string, string]>; truncated: number }> {
  const error = `${name} must be a list of [name, value] pairs`;
  if (value === undefined || value === null) return { ok: true, headers: [], truncated: 0 };
  if (!Array.isArray(value)) return { ok: false, error };
  let truncated = 0;
  const list = value.length > L.maxHeaderCount ? value.slice(0, L.maxHeaderCount) : value;
  if (list !== value) truncated++;
  const headers: Array<[string, string]> = [];
  for (const pair of list) {
    if (!Array.isArray(pair) || pair.length !== 2 || typeof pair[0] !== "string" || typeof pair[1] !== "string") {
      return { ok: false, error };
    }
    truncated += keepHeader(headers, headers.length, pair[0], pair[1]);
  }
  return { ok: true, headers, truncated };
}

function validateTags(value: unknown, name: string): Result<{ tags: Record<string, string>; truncated: number }> {
  const error = `${name} must be an object of strings`;
  if (value === undefined || value === null) return { ok: true, tags: {}, truncated: 0 };
  if (typeof value !== "object" || Array.isArray(value)) return { ok: false, error };
  const tags: Record<string, string> = Object.create(null);
  let truncated = 0;
  let count = 0;
  for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
    if (typeof v !== "string") return { ok: false, error };
    if (++count > L.maxTags) {
      truncated++;
      break;
    }
    truncated += keepTag(tags, k, v);
  }
  return { ok: true, tags: { ...tags }, truncated };
}

/** Sets headers[at] to one header, its name and value cut to their limits; returns how many of the two were cut. */
export function keepHeader(headers: Array<[string, string]>, at: number, name: string, value: string): number {
  const isNameCut = name.length > L.maxHeaderNameChars;
  const isValueCut = value.length > L.maxHeaderValueChars;
  headers[at] = [isNameCut ? cutText(name, L.maxHeaderNameChars) : name, isValueCut ? cutText(value, L.maxHeaderValueChars) : value];
  return (isNameCut ? 1 : 0) + (isValueCut ? 1 : 0);
}

/** Sets one tag, its key and value cut to their limits; returns how many of the two were cut. */
export function keepTag(tags: Record<string, string>, key: string, value: string): number {
  const kept = key.length > 128 ? cutText(key, 128) : key;
  const isValueCut = value.length > L.maxTagChars;
  tags[kept] = isValueCut ? cutText(value, L.maxTagChars) : value;
  return (kept !== key ? 1 : 0) + (isValueCut ? 1 : 0);
}
