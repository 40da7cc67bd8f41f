import { base64 } from "~/lib/bytes.ts";
import { eventFields, type TracedEvent } from "./event.ts";
import {
  type BatchColumn,
  BODY_FORM,
  batchColumnKinds,
  type ColumnKind,
  type EventBatch,
  type EventBatchError,
  readEventBatch,
} from "./event-batch.ts";
import type { EventFields } from "./event-fields.ts";
import { cutText, publishLimits as L } from "./publish.ts";
import { BASE64, eventChecks, isEventId, keepHeader, keepTag, MAX_MICROS } from "./validate-event.ts";

/**
 * A binary event batch, read and validated in one pass: the same limits and outcome per event as validateEvent on
 * the JSON path (same cuts, counts, neutral values and refusal reasons), without building an intermediate object per
 * event. Server-only, like validate-event.ts.
 */
export type BatchValidation = {
  seq: number;
  /** The publisher sent these before, on a connection lost without an answer: some may be stored already. */
  isResent: boolean;
  events: TracedEvent[];
  refused: number;
  truncated: number;
  /** The first few distinct refusal reasons. */
  errors: string[];
  /**
   * Per body field, the bodies the frame carried as bytes, by event: what each body's base64 decodes to, read from the
   * frame, so the server's search fields need not decode it again. Held only as long as this result (views of the frame).
   */
  frameBodies?: ReadonlyMap<string, ReadonlyMap<TracedEvent, FrameBody>>;
};

/** A body as the frame carried it: `value` is the base64 the event was given, `bytes` what it decodes to (absent: sent as base64). */
export type FrameBody = { readonly value: string; readonly bytes?: Uint8Array };

/** Largest body kept as bytes: the bytes whose base64 is the longest body string the JSON path keeps. */
const MAX_BODY_BYTES = ((L.maxBodyChars - (L.maxBodyChars % 4)) / 4) * 3;

type PairsColumn = Extract<BatchColumn, { kind: "pairs" }>;
type BodyColumn = Extract<BatchColumn, { kind: "body" }>;

/** The validator of one field table's frames (validateEventBatch is eventFields'). */
export function eventBatchValidator(fields: EventFields): (frame: Uint8Array) => BatchValidation | EventBatchError {
  const c = eventChecks(fields);
  const kinds: readonly string[] = c.kind.values;
  const wireKinds = batchColumnKinds(fields);
  // Each field type's places and limits as flat arrays, walked per event in table order.
  const text = c.scalars.filter((f) => f.type === "text");
  const ints = c.scalars.filter((f) => f.type === "int");
  const flags = c.scalars.filter((f) => f.type === "flag");
  const textAt = text.map((f) => f.at);
  const textMax = text.map((f) => f.max);
  const intAt = ints.map((f) => f.at);
  const intMin = ints.map((f) => f.min);
  const intMax = ints.map((f) => f.max);
  const intAbsent = ints.map((f) => f.absent);
  const flagAt = flags.map((f) => f.at);
  /** Where each column of a frame goes: its group and its index in the group. */
  const slots = new Map<string, number>();
  for (const group of [text, ints, flags, c.bodies, c.headers, c.tags]) {
    for (const [j, f] of group.entries()) slots.set(f.name, j);
  }

  return (frame) => {
    const batch = readEventBatch(frame, { maxEvents: L.maxEventsPerMessage, maxExpandedChars: L.maxBatchExpandedChars });
    if ("error" in batch) return batch;
    const textCols = new Array<Uint32Array | undefined>(text.length);
    const intCols = new Array<Float64Array | undefined>(ints.length);
    const flagCols = new Array<Uint8Array | undefined>(flags.length);
    const bodyCols = new Array<BodyColumn | undefined>(c.bodies.length);
    const headerCols = new Array<PairsColumn | undefined>(c.headers.length);
    const tagCols = new Array<PairsColumn | undefined>(c.tags.length);
    let idCol: Uint32Array | undefined;
    let timeCol: Float64Array | undefined;
    let kindCol: Uint32Array | undefined;
    // The columns this server knows, each of the kind it expects (a known field of another kind is a broken frame).
    for (const [name, column] of batch.columns) {
      const expected: ColumnKind | undefined = wireKinds.get(name);
      if (!expected) continue;
      if (column.kind !== expected) return malformed(batch, `column ${name} must be of kind ${expected}`);
      const slot = slots.get(name) ?? 0;
      const type = fields.byName.get(name)!.type;
      if (type === "id" && column.kind === "str") idCol = column.index;
      else if (type === "kind" && column.kind === "str") kindCol = column.index;
      else if (type === "time" && column.kind === "f64") timeCol = column.values;
      else if (column.kind === "str") textCols[slot] = column.index;
      else if (column.kind === "f64") intCols[slot] = column.values;
      else if (column.kind === "bool") flagCols[slot] = column.values;
      else if (column.kind === "body") bodyCols[slot] = column;
      else if (type === "headers") headerCols[slot] = column;
      else tagCols[slot] = column;
    }

    const { strings } = batch;
    const events: TracedEvent[] = [];
    const errors = new Set<string>();
    let refused = 0;
    let truncated = 0;
    const refuse = (error: string) => {
      refused++;
      if (errors.size < 5) errors.add(error);
    };
    // Every place is written before each build, which copies the values out.
    const values = new Array<unknown>(c.count);
    const bodyValues = new Array<Body>(c.bodies.length);
    const frameBodies = new Map(c.bodies.map((f) => [f.name, new Map<TracedEvent, FrameBody>()]));
    const bodyMaps = [...frameBodies.values()];

    next: for (let i = 0; i < batch.count; i++) {
      const id = idCol ? strings[idCol[i]!]! : "";
      if (!isEventId(id)) {
        refuse(c.errors.id);
        continue;
      }
      const time = timeCol ? timeCol[i]! : Number.NaN;
      // NaN also stands for a time JSON could not carry (it would arrive as null): refused alike.
      // Stored as whole microseconds: a fraction below one would become 0.
      if (!Number.isFinite(time) || time < 1 || time > MAX_MICROS) {
        refuse(c.errors.time);
        continue;
      }
      const kind = kindCol ? strings[kindCol[i]!]! : kinds[0]!;
      if (!kinds.includes(kind)) {
        refuse(c.errors.kind);
        continue;
      }
      for (let j = 0; j < bodyValues.length; j++) {
        const body = bodyOf(bodyCols[j], i, strings);
        if (body.error) {
          refuse(`${c.bodies[j]!.name} must be base64`);
          continue next;
        }
        bodyValues[j] = body;
      }
      values[c.time.at] = Math.trunc(time);
      values[c.id.at] = id.toLowerCase();
      values[c.kind.at] = kind;
      let cuts = 0;
      for (let j = 0; j < textAt.length; j++) {
        const col = textCols[j];
        let value = col ? strings[col[i]!]! : "";
        const max = textMax[j]!;
        if (value.length > max) {
          value = cutText(value, max);
          cuts++;
        }
        values[textAt[j]!] = value;
      }
      for (let j = 0; j < intAt.length; j++) {
        const col = intCols[j];
        const value = col ? col[i]! : Number.NaN;
        // +0 first: JSON carries -0 as 0.
        values[intAt[j]!] = Number.isFinite(value) ? Math.min(intMax[j]!, Math.max(intMin[j]!, Math.trunc(value + 0))) : intAbsent[j]!;
      }
      for (let j = 0; j < flagAt.length; j++) values[flagAt[j]!] = flagCols[j]?.[i] === 1;
      for (let j = 0; j < bodyValues.length; j++) {
        const body = bodyValues[j]!;
        const place = c.bodies[j]!;
        values[place.at] = body.value;
        if (body.isCut) {
          values[place.flagAt] = true;
          cuts++;
        }
      }
      for (let j = 0; j < headerCols.length; j++) {
        const headers = headersOf(headerCols[j], i, strings);
        values[c.headers[j]!.at] = headers.headers;
        cuts += headers.truncated;
      }
      for (let j = 0; j < tagCols.length; j++) {
        const tags = tagsOf(tagCols[j], i, strings);
        values[c.tags[j]!.at] = tags.tags;
        cuts += tags.truncated;
      }
      const event = c.build(values);
      for (let j = 0; j < bodyValues.length; j++) if (bodyValues[j]!.bytes) bodyMaps[j]!.set(event, bodyValues[j]!);
      events.push(event);
      truncated += cuts;
    }
    return { seq: batch.seq, isResent: batch.isResent, events, refused, truncated, errors: [...errors], frameBodies };
  };
}

export const validateEventBatch: (frame: Uint8Array) => BatchValidation | EventBatchError = eventBatchValidator(eventFields);

function malformed(batch: EventBatch, message: string): EventBatchError {
  return { error: "malformed", seq: batch.seq, message: `event batch: ${message}` };
}

type Body = { value: string; isCut: boolean; error: boolean; bytes?: Uint8Array };
const emptyBody: Body = { value: "", isCut: false, error: false };

function bodyOf(column: BodyColumn | undefined, i: number, strings: string[]): Body {
  if (!column) return emptyBody;
  const form = column.forms[i];
  if (form === BODY_FORM.bytes) {
    const length = column.b[i]!;
    if (length === 0) return emptyBody;
    const isCut = length > MAX_BODY_BYTES;
    const start = column.a[i]!;
    const end = start + (isCut ? MAX_BODY_BYTES : length);
    return { value: base64(column.data, start, end), isCut, error: false, bytes: column.data.subarray(start, end) };
  }
  if (form === BODY_FORM.base64) {
    const raw = strings[column.a[i]!]!;
    if (raw === "") return emptyBody;
    const isCut = raw.length > L.maxBodyChars;
    // Cut on a base64 quantum so the kept part still decodes.
    const value = isCut ? raw.slice(0, L.maxBodyChars - (L.maxBodyChars % 4)) : raw;
    return { value, isCut, error: !BASE64.test(value) };
  }
  return emptyBody;
}

function headersOf(column: PairsColumn | undefined, i: number, strings: string[]): { headers: Array<[string, string]>; truncated: number } {
  if (!column) return { headers: [], truncated: 0 };
  const at = 2 * column.starts[i]!;
  const count = column.counts[i]!;
  let truncated = count > L.maxHeaderCount ? 1 : 0;
  const n = Math.min(count, L.maxHeaderCount);
  const out = new Array<[string, string]>(n);
  const { refs } = column;
  for (let k = 0; k < n; k++) truncated += keepHeader(out, k, strings[refs[at + 2 * k]!]!, strings[refs[at + 2 * k + 1]!]!);
  return { headers: out, truncated };
}

function tagsOf(column: PairsColumn | undefined, i: number, strings: string[]): { tags: Record<string, string>; truncated: number } {
  if (!column) return { tags: {}, truncated: 0 };
  const at = 2 * column.starts[i]!;
  const count = column.counts[i]!;
  if (count === 0) return { tags: {}, truncated: 0 };
  // As validateTags: a null-prototype object first, so "__proto__" is kept as a plain key.
  const tags: Record<string, string> = Object.create(null);
  let truncated = 0;
  const { refs } = column;
  for (let k = 0; k < count; k++) {
    if (k >= L.maxTags) {
      truncated++;
      break;
    }
    truncated += keepTag(tags, strings[refs[at + 2 * k]!]!, strings[refs[at + 2 * k + 1]!]!);
  }
  return { tags: { ...tags }, truncated };
}
