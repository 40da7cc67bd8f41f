import { latin1, utf16le } from "~/lib/bytes.ts";
import { type CapturedEvent, eventFields } from "./event.ts";
import type { EventFields, FieldType } from "./event-fields.ts";

/**
 * The binary publish frame: one batch of events, column by column. JSON cost the publisher ~7 us and the
 * server ~17 us per event (stringify, parse, then a field-by-field check of every object); this frame is
 * built and read with a handful of typed-array passes (docs/adr/0012-binary-publish-batches.md).
 *
 *   0   magic 0x89 "TSB" (0x89 never starts UTF-8 text, so a frame is never mistaken for JSON)
 *   4   u8 version (1), 3 bytes zero
 *   8   u32 header byte length H, then H bytes of JSON header:
 *         {"resent":false,"seq":N,"count":n,"strings":[K,B,"latin1"|"utf16"],"columns":[[name,kind,byteLength],...]}
 *         ("resent" first, at a fixed place: a frame sent again after a reconnect is marked without re-encoding it,
 *         setEventBatchResent; readers that predate it ignore it)
 *   then sections, each starting on an 8-byte boundary (from the frame's start):
 *         string lengths: K x u32 (UTF-16 units)
 *         string data: B bytes, all K strings joined (Latin-1, or UTF-16LE when a character needs it)
 *         one section per column, in header order, byteLength bytes each
 *
 * Column kinds (n = count, all little-endian):
 *   "str"   n x u32 string index
 *   "f64"   n x f64 (NaN: absent, the field's neutral value)
 *   "bool"  n x u8 (0 or 1)
 *   "pairs" n x u32 pair count, then 2 x u32 string indexes per pair (headers in wire order; tags)
 *   "body"  n x u8 form (0 empty, 1 bytes, 2 base64 string), zero-padded to 4 bytes, then n x u32 a and
 *           n x u32 b (bytes: offset and length in the data; base64: a = string index), then the data bytes
 * Readers skip columns they do not know (newer agents); a missing column gives every event its neutral value
 * (older agents), as a missing JSON field does.
 */

export const EVENT_BATCH_VERSION = 1;
/** What the server advertises in its "ready" message when it reads these frames. */
export const EVENT_BATCH_FORMAT = "event-batch/1";
const MAGIC = [0x89, 0x54, 0x53, 0x42] as const;
const PREFIX_BYTES = 12;
const MAX_HEADER_BYTES = 64 * 1024;

export type ColumnKind = "str" | "f64" | "bool" | "pairs" | "body";

const columnKinds: Record<FieldType, ColumnKind> = {
  time: "f64",
  id: "str",
  kind: "str",
  text: "str",
  int: "f64",
  flag: "bool",
  body: "body",
  headers: "pairs",
  tags: "pairs",
};

/** Each field's column kind in a frame, by name (a field table's names travel in the header, so the order is free). */
export function batchColumnKinds(fields: EventFields): Map<string, ColumnKind> {
  return new Map(fields.rows.map((f) => [f.name, columnKinds[f.type]]));
}

/**
 * The sections of a table's frames, by column kind. `isUnique`: values (nearly) unique to each event, where a hash
 * lookup to de-duplicate them would cost more than it saves; every string column still skips a value equal to the
 * previous event's (one compare).
 */
type BatchLayout = {
  str: Array<{ name: string; isUnique: boolean; missing: string }>;
  f64: string[];
  bool: string[];
  pairs: Array<{ name: string; isMap: boolean }>;
  body: string[];
};

function batchLayout(fields: EventFields): BatchLayout {
  const of = (kind: ColumnKind) => fields.rows.filter((f) => columnKinds[f.type] === kind);
  return {
    str: of("str").map((f) => ({ name: f.name, isUnique: f.isUnique === true, missing: f.type === "kind" ? fields.kind.values[0]! : "" })),
    f64: of("f64").map((f) => f.name),
    bool: of("bool").map((f) => f.name),
    pairs: of("pairs").map((f) => ({ name: f.name, isMap: f.type === "tags" })),
    body: of("body").map((f) => f.name),
  };
}

const BODY_EMPTY = 0;
const BODY_BYTES = 1;
const BODY_BASE64 = 2;

const align = (n: number, to: number) => (n + to - 1) & ~(to - 1);
const textEncoder = new TextEncoder();

/**
 * The string table of one batch: strings appended to one text (a rope: no array, no join) with their lengths
 * in UTF-16 units; `intern` de-duplicates.
 */
class StringTable {
  text = "";
  lengths = new Uint32Array(1024);
  count = 0;
  private readonly index = new Map<string, number>();

  intern(s: string): number {
    let i = this.index.get(s);
    if (i === undefined) {
      i = this.append(s);
      this.index.set(s, i);
    }
    return i;
  }

  append(s: string): number {
    if (this.count === this.lengths.length) {
      const grown = new Uint32Array(2 * this.count);
      grown.set(this.lengths);
      this.lengths = grown;
    }
    this.lengths[this.count] = s.length;
    this.text += s;
    return this.count++;
  }
}

/**
 * A column's bytes: `bytes`, then (body columns) each of `bodies` in turn, which the frame copies straight from the
 * events' samples (one copy of each body, not one into the section and another into the frame).
 */
type Section = { name: string; kind: ColumnKind; bytes: Uint8Array; bodies?: Uint8Array[]; bodyBytes?: number };

const sectionLength = (s: Section) => s.bytes.byteLength + (s.bodyBytes ?? 0);

type AnyEvent = Readonly<Record<string, unknown>>;

/**
 * The encoder of one field table's frames (encodeEventBatch is eventFields'). Values of a wrong type (outside the
 * event type's) are written as their field's neutral value; the kind field defaults to the first kind, as it does on
 * the server.
 */
export function eventBatchEncoder(fields: EventFields): (seq: number, events: readonly AnyEvent[]) => Uint8Array {
  const layout = batchLayout(fields);
  return (seq, events) => {
    const n = events.length;
    const table = new StringTable();
    const sections: Section[] = [];
    for (const { name, isUnique, missing } of layout.str) {
      const column = new Uint32Array(n);
      let last: string | undefined;
      let lastIndex = 0;
      for (let i = 0; i < n; i++) {
        const value = events[i]![name];
        const s = typeof value === "string" ? value : missing;
        if (s !== last) {
          lastIndex = isUnique ? table.append(s) : table.intern(s);
          last = s;
        }
        column[i] = lastIndex;
      }
      sections.push({ name, kind: "str", bytes: new Uint8Array(column.buffer) });
    }
    for (const name of layout.f64) {
      const column = new Float64Array(n);
      for (let i = 0; i < n; i++) {
        const value = events[i]![name];
        column[i] = typeof value === "number" ? value : Number.NaN;
      }
      sections.push({ name, kind: "f64", bytes: new Uint8Array(column.buffer) });
    }
    for (const name of layout.bool) {
      const column = new Uint8Array(n);
      for (let i = 0; i < n; i++) column[i] = events[i]![name] === true ? 1 : 0;
      sections.push({ name, kind: "bool", bytes: column });
    }
    for (const { name, isMap } of layout.pairs) {
      sections.push({ name, kind: "pairs", bytes: encodePairs(events, name, isMap, table) });
    }
    for (const name of layout.body) sections.push({ name, kind: "body", ...encodeBodies(events, name, table) });
    return assemble(seq, n, table, sections);
  };
}

/** One binary frame for these events. */
export const encodeEventBatch: (seq: number, events: readonly CapturedEvent[]) => Uint8Array = eventBatchEncoder(eventFields);

/** Header lists (pairs in wire order) or maps (tags), as one pairs section. */
function encodePairs(events: readonly AnyEvent[], name: string, isMap: boolean, table: StringTable): Uint8Array {
  const n = events.length;
  let out = new Uint32Array(n + 32 * n);
  let at = n;
  const lastNames: string[] = [];
  const lastIndexes: number[] = [];
  const room = (more: number) => {
    if (at + more <= out.length) return;
    const grown = new Uint32Array(Math.max(2 * out.length, at + more));
    grown.set(out);
    out = grown;
  };
  for (let i = 0; i < n; i++) {
    const value = events[i]![name];
    if (isMap) {
      if (typeof value !== "object" || value === null) continue;
      const map = value as Record<string, unknown>;
      for (const key of Object.keys(map)) {
        room(2);
        out[at++] = table.intern(key);
        out[at++] = table.intern(text(map[key]));
        out[i]!++;
      }
    } else if (Array.isArray(value)) {
      // Header names repeat across events, mostly at the same position (one compare instead of a hash
      // lookup); their values mostly do not repeat.
      const pairs = value as unknown[];
      room(2 * pairs.length);
      for (let k = 0; k < pairs.length; k++) {
        const pair = pairs[k];
        const isPair = Array.isArray(pair);
        const key = isPair ? text(pair[0]) : "";
        if (key !== lastNames[k]) {
          lastNames[k] = key;
          lastIndexes[k] = table.intern(key);
        }
        out[at++] = lastIndexes[k]!;
        out[at++] = table.append(isPair ? text(pair[1]) : "");
      }
      out[i] = pairs.length;
    }
  }
  return new Uint8Array(out.buffer, 0, 4 * at);
}

const text = (value: unknown): string => (typeof value === "string" ? value : "");

function encodeBodies(
  events: readonly AnyEvent[],
  name: string,
  table: StringTable,
): { bytes: Uint8Array; bodies: Uint8Array[]; bodyBytes: number } {
  const n = events.length;
  const head = align(n, 4) + 8 * n;
  const out = new Uint8Array(head);
  const a = new Uint32Array(out.buffer, align(n, 4), n);
  const b = new Uint32Array(out.buffer, align(n, 4) + 4 * n, n);
  const bodies: Uint8Array[] = [];
  let offset = 0;
  for (let i = 0; i < n; i++) {
    const body = events[i]![name];
    if (body instanceof Uint8Array) {
      if (body.byteLength === 0) continue;
      out[i] = BODY_BYTES;
      bodies.push(body);
      a[i] = offset;
      b[i] = body.byteLength;
      offset += body.byteLength;
    } else if (typeof body === "string" && body.length > 0) {
      out[i] = BODY_BASE64;
      a[i] = table.append(body);
    }
  }
  return { bytes: out, bodies, bodyBytes: offset };
}

/**
 * `seq` for a frame whose sequence number is set later (setEventBatchSeq), by whoever sends it: the header then
 * holds the number right-aligned in a fixed width, padded with the spaces JSON allows before a value.
 */
export const SEQ_SET_LATER = -1;
const HEADER_START = '{"resent":false,"seq":';
const RESENT_AT = PREFIX_BYTES + '{"resent":'.length;
const SEQ_AT = PREFIX_BYTES + HEADER_START.length;
const SEQ_WIDTH = 16;

/**
 * Marks a frame as sent before on a connection that was lost without an answer: the server then drops the events it
 * already stored (`true ` is as long as `false`, JSON allows the space).
 */
export function setEventBatchResent(frame: Uint8Array): void {
  const flag = isEventBatchFrame(frame) ? textDecoder.decode(frame.subarray(RESENT_AT, RESENT_AT + 5)) : "";
  if (flag === "true ") return;
  if (flag !== "false") throw new Error("not a frame that can be marked resent");
  frame.set(textEncoder.encode("true "), RESENT_AT);
}

/** Sets the sequence number of a frame encoded with SEQ_SET_LATER (it may be set again before each send). */
export function setEventBatchSeq(frame: Uint8Array, seq: number): void {
  const digits = String(seq);
  if (!Number.isSafeInteger(seq) || seq < 0 || frame[SEQ_AT + SEQ_WIDTH] !== 0x2c) throw new Error("not a frame whose seq is set later");
  for (let i = 0; i < SEQ_WIDTH; i++)
    frame[SEQ_AT + i] = i < SEQ_WIDTH - digits.length ? 0x20 : digits.charCodeAt(i - (SEQ_WIDTH - digits.length));
}

function assemble(seq: number, count: number, table: StringTable, sections: Section[]): Uint8Array {
  const encoding: StringEncoding = NOT_LATIN1.test(table.text) ? "utf16" : "latin1";
  const data = Buffer.from(table.text, encoding === "latin1" ? "latin1" : "utf16le");
  const lengths = table.lengths.subarray(0, table.count);
  const headerText = JSON.stringify({
    resent: false,
    seq: seq === SEQ_SET_LATER ? 0 : seq,
    count,
    strings: [table.count, data.byteLength, encoding],
    columns: sections.map((s) => [s.name, s.kind, sectionLength(s)]),
  });
  const header = textEncoder.encode(
    seq === SEQ_SET_LATER ? `${HEADER_START}${"0".padStart(SEQ_WIDTH, " ")}${headerText.slice(`${HEADER_START}0`.length)}` : headerText,
  );
  const parts: Section[] = [
    { name: "", kind: "str", bytes: new Uint8Array(lengths.buffer, 0, 4 * table.count) },
    { name: "", kind: "str", bytes: data },
    ...sections,
  ];
  const start = align(PREFIX_BYTES + header.byteLength, 8);
  let size = start;
  for (const p of parts) size += align(sectionLength(p), 8);
  // Not zero-filled (a batch of large bodies is megabytes): every byte is written below, padding included.
  const frame: Uint8Array = Buffer.allocUnsafe(size);
  frame.set(MAGIC);
  frame.fill(0, 4, 8);
  frame[4] = EVENT_BATCH_VERSION;
  new DataView(frame.buffer, frame.byteOffset, frame.byteLength).setUint32(8, header.byteLength, true);
  frame.set(header, PREFIX_BYTES);
  frame.fill(0, PREFIX_BYTES + header.byteLength, start);
  let offset = start;
  for (const p of parts) {
    let at = offset;
    frame.set(p.bytes, at);
    at += p.bytes.byteLength;
    for (const body of p.bodies ?? []) {
      frame.set(body, at);
      at += body.byteLength;
    }
    offset += align(sectionLength(p), 8);
    frame.fill(0, at, offset);
  }
  return frame;
}

/**
 * The string table goes as Latin-1 (one byte per UTF-16 unit: nearly every batch) or as UTF-16LE code units
 * (any character above U+00FF; lone surrogates survive, as they do in JSON). Both decode per string straight
 * from the frame into a string of its own: slices of one big decoded string would each keep the whole table
 * alive for as long as any event of the batch is held (measured: 300 kept events held 185 MB).
 */
type StringEncoding = "latin1" | "utf16";
// biome-ignore lint/suspicious/noControlCharactersInRegex: the range of latin1 is the point of the test
const NOT_LATIN1 = /[^\u0000-\u00ff]/;

/** True when these bytes are a binary event batch (of any version), not a JSON message. */
export function isEventBatchFrame(bytes: Uint8Array): boolean {
  return bytes.length >= 4 && bytes[0] === MAGIC[0] && bytes[1] === MAGIC[1] && bytes[2] === MAGIC[2] && bytes[3] === MAGIC[3];
}

/** A column as read from a frame; arrays are views of the frame (no copy). */
export type BatchColumn =
  | { kind: "str"; index: Uint32Array }
  | { kind: "f64"; values: Float64Array }
  | { kind: "bool"; values: Uint8Array }
  /** starts[i]: where event i's pairs begin in refs (in pairs, not indexes). */
  | { kind: "pairs"; counts: Uint32Array; starts: Float64Array; refs: Uint32Array }
  | { kind: "body"; forms: Uint8Array; a: Uint32Array; b: Uint32Array; data: Uint8Array };

export type EventBatch = {
  seq: number;
  /** Sent before on a connection lost without an answer (setEventBatchResent). */
  isResent: boolean;
  count: number;
  strings: string[];
  columns: Map<string, BatchColumn>;
};

export type EventBatchError = { error: "malformed" | "too_many_events" | "too_large"; seq: number | null; message: string };

export type EventBatchLimits = {
  maxEvents: number;
  /**
   * Characters (and body bytes) the batch's events may carry in all. The string table is de-duplicated, so a
   * small frame could otherwise name one long string from every field of every event: the sinks would get many
   * times what crossed the socket. JSON cannot do that: each value is in the message.
   */
  maxExpandedChars: number;
};

/**
 * Reads a frame's structure: every offset, length, count and string index is checked against the frame, so
 * the columns can be used without further bounds checks. Never throws; allocation is bounded by the frame.
 */
export function readEventBatch(input: Uint8Array, { maxEvents, maxExpandedChars }: EventBatchLimits): EventBatch | EventBatchError {
  const malformed = (message: string, seq: number | null = null): EventBatchError => ({
    error: "malformed",
    seq,
    message: `event batch: ${message}`,
  });
  if (!isEventBatchFrame(input) || input.length < PREFIX_BYTES) return malformed("too short");
  if (input[4] !== EVENT_BATCH_VERSION) return malformed(`version ${input[4]} is not supported (this server reads ${EVENT_BATCH_VERSION})`);
  // Typed views need 8-byte alignment; a socket's buffer may sit anywhere in its pool.
  const bytes = input.byteOffset % 8 === 0 ? input : new Uint8Array(input);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const headerBytes = view.getUint32(8, true);
  if (headerBytes > MAX_HEADER_BYTES || PREFIX_BYTES + headerBytes > bytes.length) return malformed("header length out of range");
  let header: unknown;
  try {
    header = JSON.parse(textDecoder.decode(bytes.subarray(PREFIX_BYTES, PREFIX_BYTES + headerBytes)));
  } catch {
    return malformed("header is not JSON");
  }
  const h = (typeof header === "object" && header !== null ? header : {}) as {
    resent?: unknown;
    seq?: unknown;
    count?: unknown;
    strings?: unknown;
    columns?: unknown;
  };
  const seq = isCount(h.seq, Number.MAX_SAFE_INTEGER) ? h.seq : null;
  if (seq === null) return malformed("seq must be a non-negative integer");
  if (!isCount(h.count, Number.MAX_SAFE_INTEGER)) return malformed("count must be a non-negative integer", seq);
  if (h.count > maxEvents) return { error: "too_many_events", seq, message: `at most ${maxEvents} events per message` };
  const count = h.count;
  const limit = bytes.length;
  if (!Array.isArray(h.strings) || h.strings.length !== 3) return malformed("strings must be [count, bytes, encoding]", seq);
  const [stringCount, stringBytes, encoding] = h.strings as unknown[];
  if (!isCount(stringCount, limit / 4) || !isCount(stringBytes, limit) || (encoding !== "latin1" && encoding !== "utf16")) {
    return malformed("string table out of range", seq);
  }
  if (!Array.isArray(h.columns) || h.columns.length > 1024) return malformed("columns must be a list", seq);

  let offset = align(PREFIX_BYTES + headerBytes, 8);
  const take = (size: number): number => {
    const start = offset;
    offset = start + align(size, 8);
    return start + size <= limit ? start : -1;
  };
  const lengthsAt = take(4 * stringCount);
  const dataAt = take(stringBytes);
  if (lengthsAt < 0 || dataAt < 0) return malformed("string table exceeds the frame", seq);
  const strings = readStrings(
    new Uint32Array(bytes.buffer, bytes.byteOffset + lengthsAt, stringCount),
    bytes.subarray(dataAt, dataAt + stringBytes),
    encoding,
  );
  if (!strings) return malformed("string lengths do not match the string data", seq);

  const columns = new Map<string, BatchColumn>();
  for (const entry of h.columns as unknown[]) {
    if (
      !Array.isArray(entry) ||
      entry.length !== 3 ||
      typeof entry[0] !== "string" ||
      typeof entry[1] !== "string" ||
      !isCount(entry[2], limit)
    ) {
      return malformed("a column must be [name, kind, byteLength]", seq);
    }
    const [name, kind, size] = entry as [string, string, number];
    const at = take(size);
    if (at < 0) return malformed(`column ${name} exceeds the frame`, seq);
    if (columns.has(name)) return malformed(`column ${name} appears twice`, seq);
    const column = readColumn(bytes, kind, at, size, count, stringCount);
    if (typeof column === "string") return malformed(`column ${name}: ${column}`, seq);
    if (column) columns.set(name, column);
  }
  const expanded = expandedChars(columns, strings);
  if (expanded > maxExpandedChars) {
    return { error: "too_large", seq, message: `event batch: its events carry ${expanded} characters, more than ${maxExpandedChars}` };
  }
  return { seq, isResent: h.resent === true, count, strings, columns };
}

const textDecoder = new TextDecoder();

function isCount(value: unknown, max: number): value is number {
  return typeof value === "number" && Number.isSafeInteger(value) && value >= 0 && value <= max;
}

/** Each string decoded on its own (see StringEncoding); null when the lengths do not add up to the data. */
function readStrings(lengths: Uint32Array, data: Uint8Array, encoding: StringEncoding): string[] | null {
  const unit = encoding === "latin1" ? 1 : 2;
  if (data.byteLength % unit !== 0) return null;
  const slice = encoding === "latin1" ? latin1 : utf16le;
  const units = data.byteLength / unit;
  const strings = new Array<string>(lengths.length);
  let at = 0;
  for (let i = 0; i < lengths.length; i++) {
    const end = at + lengths[i]!;
    if (end > units) return null;
    strings[i] = slice(data, at * unit, end * unit);
    at = end;
  }
  return at === units ? strings : null;
}

function readColumn(
  bytes: Uint8Array,
  kind: string,
  at: number,
  size: number,
  n: number,
  stringCount: number,
): BatchColumn | string | null {
  const base = bytes.byteOffset + at;
  const { buffer } = bytes;
  switch (kind) {
    case "str": {
      if (size !== 4 * n) return "wrong size";
      const index = new Uint32Array(buffer, base, n);
      return allBelow(index, stringCount) ? { kind, index } : "string index out of range";
    }
    case "f64":
      return size === 8 * n ? { kind, values: new Float64Array(buffer, base, n) } : "wrong size";
    case "bool":
      return size === n ? { kind, values: new Uint8Array(buffer, base, n) } : "wrong size";
    case "pairs": {
      if (size < 4 * n || (size - 4 * n) % 8 !== 0) return "wrong size";
      const counts = new Uint32Array(buffer, base, n);
      const starts = new Float64Array(n);
      let total = 0;
      for (let i = 0; i < n; i++) {
        starts[i] = total;
        total += counts[i]!;
      }
      if (4 * n + 8 * total !== size) return "pair counts do not match its size";
      const refs = new Uint32Array(buffer, base + 4 * n, 2 * total);
      return allBelow(refs, stringCount) ? { kind, counts, starts, refs } : "string index out of range";
    }
    case "body": {
      const head = align(n, 4) + 8 * n;
      if (size < head) return "wrong size";
      const column = {
        kind,
        forms: new Uint8Array(buffer, base, n),
        a: new Uint32Array(buffer, base + align(n, 4), n),
        b: new Uint32Array(buffer, base + align(n, 4) + 4 * n, n),
        data: new Uint8Array(buffer, base + head, size - head),
      } as const;
      for (let i = 0; i < n; i++) {
        const form = column.forms[i];
        if (
          form === BODY_BYTES
            ? column.a[i]! + column.b[i]! > column.data.length
            : form === BODY_BASE64
              ? column.a[i]! >= stringCount
              : form !== BODY_EMPTY
        ) {
          return "body out of range";
        }
      }
      return column;
    }
    default:
      // A kind from a newer agent: skipped, like an unknown JSON field.
      return null;
  }
}

/** What the events would carry if every string and body were written out (bodies counted in bytes). */
function expandedChars(columns: Map<string, BatchColumn>, strings: string[]): number {
  let total = 0;
  for (const column of columns.values()) {
    if (column.kind === "str") for (let i = 0; i < column.index.length; i++) total += strings[column.index[i]!]!.length;
    else if (column.kind === "pairs") for (let i = 0; i < column.refs.length; i++) total += strings[column.refs[i]!]!.length;
    else if (column.kind === "body") {
      for (let i = 0; i < column.forms.length; i++) {
        const form = column.forms[i];
        total += form === BODY_BYTES ? column.b[i]! : form === BODY_BASE64 ? strings[column.a[i]!]!.length : 0;
      }
    }
  }
  return total;
}

function allBelow(values: Uint32Array, max: number): boolean {
  for (let i = 0; i < values.length; i++) if (values[i]! >= max) return false;
  return true;
}

export const BODY_FORM = { empty: BODY_EMPTY, bytes: BODY_BYTES, base64: BODY_BASE64 } as const;
