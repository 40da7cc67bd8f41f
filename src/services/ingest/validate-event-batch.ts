import { base64 } from "~/lib/bytes.ts";
import type { TracedEvent } from "~/lib/protocol/event.ts";
import {
  type BatchColumn,
  BODY_FORM,
  boolColumns,
  type EventBatch,
  type EventBatchError,
  numberColumns,
  pairColumns,
  readEventBatch,
  stringColumns,
} from "~/lib/protocol/event-batch.ts";
import { publishLimits as L } from "~/lib/protocol/publish.ts";
import type { Result } from "~/lib/result.ts";
import { isUuid } from "~/lib/server/ids.ts";
import { BASE64, cut, fields, type Kind, keepHeader, keepTag, MAX_MICROS } from "./validate-event.ts";

/**
 * A binary event batch, read and validated in one pass: the same limits and outcome per event as
 * validateEvent on the JSON path (same cuts, counts, neutral values and refusal reasons), without building
 * an intermediate object per event.
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
};

/** Largest body kept as bytes: the bytes whose base64 is the longest body string the JSON path keeps. */
const MAX_BODY_BYTES = ((L.maxBodyChars - (L.maxBodyChars % 4)) / 4) * 3;

type Int = Extract<Kind, { t: "int" }>;

export function validateEventBatch(frame: Uint8Array): BatchValidation | EventBatchError {
  const batch = readEventBatch(frame, { maxEvents: L.maxEventsPerMessage, maxExpandedChars: L.maxBatchExpandedChars });
  if ("error" in batch) return batch;
  const resolved = resolveColumns(batch);
  if (!resolved.ok) return { error: "malformed", seq: batch.seq, message: `event batch: ${resolved.error}` };
  const { cols } = resolved;
  const { strings } = batch;
  const events: TracedEvent[] = [];
  const errors = new Set<string>();
  let refused = 0;
  let truncated = 0;

  const refuse = (error: string) => {
    refused++;
    if (errors.size < 5) errors.add(error);
  };
  const row = new Row(cols, strings);
  for (let i = 0; i < batch.count; i++) {
    const eventId = cols.str.event_id ? strings[cols.str.event_id[i]!]! : "";
    if (!isUuid(eventId)) {
      refuse("event_id must be a UUID");
      continue;
    }
    const time = cols.f64.time ? cols.f64.time[i]! : Number.NaN;
    // NaN also stands for a time JSON could not carry (it would arrive as null): refused alike.
    if (!Number.isFinite(time) || time <= 0 || time > MAX_MICROS) {
      refuse("time must be microseconds since the epoch");
      continue;
    }
    const protocol = cols.str.protocol ? strings[cols.str.protocol[i]!]! : "http";
    if (protocol !== "http" && protocol !== "tcp") {
      refuse('protocol must be "http" or "tcp"');
      continue;
    }
    row.i = i;
    row.cuts = 0;
    const reqBody = body(cols.body.http_req_body, i, strings);
    if (reqBody.error) {
      refuse("http_req_body must be base64");
      continue;
    }
    const respBody = body(cols.body.http_resp_body, i, strings);
    if (respBody.error) {
      refuse("http_resp_body must be base64");
      continue;
    }
    let cuts = (reqBody.isCut ? 1 : 0) + (respBody.isCut ? 1 : 0);
    const reqHeaders = headers(cols.pairs.http_req_headers, i, strings);
    const respHeaders = headers(cols.pairs.http_resp_headers, i, strings);
    const tags = tagsOf(cols.pairs.tags, i, strings);
    cuts += reqHeaders.truncated + respHeaders.truncated + tags.truncated;

    events.push({
      time: Math.trunc(time),
      event_id: eventId.toLowerCase(),
      protocol,
      parent_event_id: row.text("parent_event_id"),
      service: row.text("service"),
      hostname: row.text("hostname"),
      gcp_project: row.text("gcp_project"),
      kubernetes_namespace: row.text("kubernetes_namespace"),
      gke_cluster_location: row.text("gke_cluster_location"),
      gke_cluster_name: row.text("gke_cluster_name"),
      gke_node_name: row.text("gke_node_name"),
      process_id: row.int("process_id"),
      process_executable_name: row.text("process_executable_name"),
      process_executable_size: row.int("process_executable_size"),
      process_command_line: row.text("process_command_line"),
      process_user: row.text("process_user"),
      tls_server_name: row.text("tls_server_name"),
      http_version: row.text("http_version"),
      http_is_outgoing: row.flag("http_is_outgoing"),
      http_client_addr: row.text("http_client_addr"),
      http_server_addr: row.text("http_server_addr"),
      http_duration: row.int("http_duration"),
      http_req_method: row.text("http_req_method"),
      http_req_path: row.text("http_req_path"),
      http_req_body_size_bytes_wire: row.int("http_req_body_size_bytes_wire"),
      http_req_transfer_encoding: row.text("http_req_transfer_encoding"),
      http_req_content_type: row.text("http_req_content_type"),
      http_req_content_encoding: row.text("http_req_content_encoding"),
      http_req_content_length: row.int("http_req_content_length"),
      http_req_host: row.text("http_req_host"),
      http_req_x_forwarded_for: row.text("http_req_x_forwarded_for"),
      http_req_body_truncated: reqBody.isCut || row.flag("http_req_body_truncated"),
      http_resp_status_code: row.int("http_resp_status_code"),
      http_resp_body_size_bytes_wire: row.int("http_resp_body_size_bytes_wire"),
      http_resp_transfer_encoding: row.text("http_resp_transfer_encoding"),
      http_resp_content_type: row.text("http_resp_content_type"),
      http_resp_content_encoding: row.text("http_resp_content_encoding"),
      http_resp_content_length: row.int("http_resp_content_length"),
      http_resp_body_truncated: respBody.isCut || row.flag("http_resp_body_truncated"),
      timing_connect: row.int("timing_connect"),
      timing_tls: row.int("timing_tls"),
      timing_send: row.int("timing_send"),
      timing_wait: row.int("timing_wait"),
      timing_receive: row.int("timing_receive"),
      bytes_sent: row.int("bytes_sent"),
      bytes_received: row.int("bytes_received"),
      http_req_body: reqBody.value,
      http_resp_body: respBody.value,
      http_req_headers: reqHeaders.headers,
      http_resp_headers: respHeaders.headers,
      tags: tags.tags,
    });
    truncated += cuts + row.cuts;
  }
  return { seq: batch.seq, isResent: batch.isResent, events, refused, truncated, errors: [...errors] };
}

/** The string, number and flag fields of the event being read (one object per batch, not closures per event). */
class Row {
  i = 0;
  /** Fields cut to their limit in this event. */
  cuts = 0;

  constructor(
    private readonly cols: Columns,
    private readonly strings: string[],
  ) {}

  text(name: (typeof stringColumns)[number]): string {
    const index = this.cols.str[name];
    if (!index) return "";
    const value = this.strings[index[this.i]!]!;
    const max = maxChars[name];
    if (value.length <= max) return value;
    this.cuts++;
    return cut(value, max);
  }

  int(name: (typeof numberColumns)[number]): number {
    const kind = intKinds[name];
    const values = this.cols.f64[name];
    const value = values ? values[this.i]! : Number.NaN;
    // +0 first: JSON carries -0 as 0.
    return Number.isFinite(value) ? Math.min(kind.max, Math.max(kind.min, Math.trunc(value + 0))) : kind.fallback;
  }

  flag(name: (typeof boolColumns)[number]): boolean {
    return this.cols.bool[name]?.[this.i] === 1;
  }
}

// event_id, protocol and time are checked apart (they refuse the event); the fallbacks below are never read.
const maxChars = Object.fromEntries(
  stringColumns.map((name) => {
    const kind = fields[name];
    return [name, kind?.t === "string" ? kind.max : 64];
  }),
) as Record<(typeof stringColumns)[number], number>;

const intKinds = Object.fromEntries(
  numberColumns.map((name) => {
    const kind = fields[name];
    return [name, kind?.t === "int" ? kind : { t: "int", min: 0, max: MAX_MICROS, fallback: 0 }];
  }),
) as Record<(typeof numberColumns)[number], Int>;

/** A body column with one Buffer over its data, so each body is one base64 call (no view object per body). */
type BodyColumn = Extract<BatchColumn, { kind: "body" }> & { buffer: Buffer };

type Columns = {
  str: Partial<Record<(typeof stringColumns)[number], Uint32Array>>;
  f64: Partial<Record<(typeof numberColumns)[number], Float64Array>>;
  bool: Partial<Record<(typeof boolColumns)[number], Uint8Array>>;
  pairs: Partial<Record<(typeof pairColumns)[number], Extract<BatchColumn, { kind: "pairs" }>>>;
  body: Partial<Record<"http_req_body" | "http_resp_body", BodyColumn>>;
};

const expectedKind = new Map<string, BatchColumn["kind"]>([
  ...stringColumns.map((n) => [n, "str"] as const),
  ...numberColumns.map((n) => [n, "f64"] as const),
  ...boolColumns.map((n) => [n, "bool"] as const),
  ...pairColumns.map((n) => [n, "pairs"] as const),
  ["http_req_body", "body"],
  ["http_resp_body", "body"],
]);

/** The columns this server knows, each of the kind it expects (a known field of another kind is a broken frame). */
function resolveColumns(batch: EventBatch): Result<{ cols: Columns }> {
  const cols: Columns = { str: {}, f64: {}, bool: {}, pairs: {}, body: {} };
  for (const [name, column] of batch.columns) {
    const expected = expectedKind.get(name);
    if (!expected) continue;
    if (column.kind !== expected) return { ok: false, error: `column ${name} must be of kind ${expected}` };
    if (column.kind === "str") cols.str[name as (typeof stringColumns)[number]] = column.index;
    else if (column.kind === "f64") cols.f64[name as (typeof numberColumns)[number]] = column.values;
    else if (column.kind === "bool") cols.bool[name as (typeof boolColumns)[number]] = column.values;
    else if (column.kind === "pairs") cols.pairs[name as (typeof pairColumns)[number]] = column;
    else {
      const { data } = column;
      cols.body[name as keyof Columns["body"]] = { ...column, buffer: Buffer.from(data.buffer, data.byteOffset, data.byteLength) };
    }
  }
  return { ok: true, cols };
}

type Body = { value: string; isCut: boolean; error: boolean };
const emptyBody: Body = { value: "", isCut: false, error: false };

function body(column: BodyColumn | undefined, i: number, strings: string[]): Body {
  if (!column) return emptyBody;
  const form = column.forms[i];
  if (form === BODY_FORM.bytes) {
    const length = column.b[i]!;
    if (length === 0) return emptyBody;
    const isCut = length > MAX_BODY_BYTES;
    const start = column.a[i]!;
    const value = base64(column.buffer, start, start + (isCut ? MAX_BODY_BYTES : length));
    return { value, isCut, error: false };
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

function headers(
  column: Extract<BatchColumn, { kind: "pairs" }> | undefined,
  i: number,
  strings: string[],
): { headers: Array<[string, string]>; truncated: number } {
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

function tagsOf(
  column: Extract<BatchColumn, { kind: "pairs" }> | undefined,
  i: number,
  strings: string[],
): { tags: Record<string, string>; truncated: number } {
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
