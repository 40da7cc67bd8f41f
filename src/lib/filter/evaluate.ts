import type { CompareExpr, FilterExpr, FilterParseError } from "~/lib/filter/ast.ts";
import { binaryMarker, binaryNeedle, headerLineValue, headerValues, isBinaryForm } from "~/lib/filter/content.ts";
import { filterFields, maxMatchedBodyLength } from "~/lib/filter/fields.ts";
import { parseFilterChipList } from "~/lib/filter/parse.ts";
import { compileRegex, type StepMeter } from "~/lib/filter/regex.ts";
import type { TracedEvent } from "~/lib/protocol/event.ts";
import type { Result } from "~/lib/result.ts";

export type EventPredicate = (event: TracedEvent) => boolean;

/**
 * Steps a compiled filter may still take (the caller refills `left` before each event). Regexes spend their
 * matcher steps; a string comparison spends one step per 4 Ki character pairs it may compare (a long `contains`
 * on a long URL is quadratic in the worst case). Once `left` is below zero every clause answers false, the
 * event's answer is unknown, and `ranOutAt` names the clause that overdrew: its chip and position in it.
 */
export type FilterMeter = StepMeter & { ranOutAt: { index: number; position: number } | null };

/** What one event may cost a live viewer's filters, on the server (ADR 0005) and in the live frame alike. */
export const filterStepsPerEvent = 100_000;

export function filterMeter(): FilterMeter {
  return { left: 0, ranOutAt: null };
}

/**
 * `matches` looks at most at this many characters of the URL (and of any other text field or header value): the
 * matcher is linear, this caps the constant. Captured paths are far shorter in practice; on a longer one a match must
 * lie within the prefix. Bodies: maxMatchedBodyLength.
 */
export const maxMatchedUrlLength = 4096;

/** A tag's value, "" when the event has none (as the stores read it). */
function tag(e: TracedEvent, key: string): string {
  const tags = e.tags;
  return typeof tags === "object" && tags !== null && Object.hasOwn(tags, key) && typeof tags[key] === "string" ? tags[key] : "";
}

function hasTag(e: TracedEvent, key: string): boolean {
  const tags = e.tags;
  return typeof tags === "object" && tags !== null && Object.hasOwn(tags, key) && typeof tags[key] === "string";
}

type Value = string | number | boolean;

/**
 * One accessor per readable name, written out: a keyed read (`e[column]`) per event costs about three times as much on
 * the live path. tests/lib/protocol/event-fields.test.ts holds each to the column the field table gives its name.
 */
const read: Readonly<Record<string, (e: TracedEvent) => Value>> = {
  "request.method": (e) => e.http_req_method,
  "request.url": (e) => e.http_req_path,
  "response.status": (e) => e.http_resp_status_code,
  "response.unanswered": (e) => e.http_unanswered,
  duration: (e) => e.http_duration,
  "request.body": (e) => e.search_req_body,
  "response.body": (e) => e.search_resp_body,
  "request.headers": (e) => e.search_req_headers,
  "response.headers": (e) => e.search_resp_headers,
  service: (e) => e.service,
  "request.host": (e) => e.http_req_host,
  "request.route": (e) => e.http_route,
  tls: (e) => tag(e, "tls"),
  "tls.reason": (e) => tag(e, "tls_reason"),
  "tls.server_name": (e) => e.tls_server_name,
  protocol: (e) => e.protocol,
  direction: (e) => (e.http_is_outgoing ? "outbound" : "inbound"),
  "http.version": (e) => e.http_version,
  "client.address": (e) => e.http_client_addr,
  "server.address": (e) => e.http_server_addr,
  "request.content_type": (e) => e.http_req_content_type,
  "response.content_type": (e) => e.http_resp_content_type,
  "request.content_encoding": (e) => e.http_req_content_encoding,
  "response.content_encoding": (e) => e.http_resp_content_encoding,
  "request.transfer_encoding": (e) => e.http_req_transfer_encoding,
  "response.transfer_encoding": (e) => e.http_resp_transfer_encoding,
  "request.content_length": (e) => e.http_req_content_length,
  "response.content_length": (e) => e.http_resp_content_length,
  "request.body_size": (e) => e.http_req_body_size_bytes_wire,
  "response.body_size": (e) => e.http_resp_body_size_bytes_wire,
  "request.body_truncated": (e) => e.http_req_body_truncated,
  "response.body_truncated": (e) => e.http_resp_body_truncated,
  "request.x_forwarded_for": (e) => e.http_req_x_forwarded_for,
  "timing.connect": (e) => e.timing_connect,
  "timing.tls": (e) => e.timing_tls,
  "timing.send": (e) => e.timing_send,
  "timing.wait": (e) => e.timing_wait,
  "timing.receive": (e) => e.timing_receive,
  bytes_sent: (e) => e.bytes_sent,
  bytes_received: (e) => e.bytes_received,
  hostname: (e) => e.hostname,
  "process.name": (e) => e.process_executable_name,
  "process.command_line": (e) => e.process_command_line,
  "process.user": (e) => e.process_user,
  "process.pid": (e) => e.process_id,
  "process.size": (e) => e.process_executable_size,
  "kubernetes.namespace": (e) => e.kubernetes_namespace,
  "gcp.project": (e) => e.gcp_project,
  "gke.cluster_name": (e) => e.gke_cluster_name,
  "gke.cluster_location": (e) => e.gke_cluster_location,
  "gke.node_name": (e) => e.gke_node_name,
  id: (e) => e.event_id,
  parent_id: (e) => e.parent_event_id,
  replay_of: (e) => e.replay_of,
  "db.system": (e) => e.db_system,
  "db.statement": (e) => e.db_statement,
  "db.operation": (e) => e.db_operation,
  "db.error": (e) => e.db_error_code,
  "db.error_message": (e) => e.db_error_message,
  "ws.message": (e) => e.ws_message,
  "ws.direction": (e) => e.ws_direction,
  "ws.opcode": (e) => e.ws_opcode,
};

/** The readable names the live evaluator reads (a test compares them with fields.ts and the field table). */
export const evaluatedFields: readonly string[] = Object.keys(read);

function compare(op: string, a: Value, b: Value): boolean {
  switch (op) {
    case "==":
      return a === b;
    case "!=":
      return a !== b;
    case "<":
      return a < b;
    case ">":
      return a > b;
    case "<=":
      return a <= b;
    case ">=":
      return a >= b;
    default:
      return false;
  }
}

/** RegExp source matching `text` literally. */
const literalSource = (text: string): string => text.replace(/[\\^$.*+?()[\]{}|/]/g, "\\$&");

/**
 * A test of one text (a column, a body's form, a header value), and what it may cost: string comparisons one step per
 * 4 Ki character pairs they may compare, a case-insensitive search a step per Ki characters more, `matches` the
 * matcher's own steps over at most `matchedLength` characters.
 */
type TextTest = (text: string, meter: FilterMeter | undefined) => boolean;

function textTest(op: string, value: string, matchedLength: number): TextTest {
  const cost = value.length;
  /** Charges the comparison to the meter; always true, so a test reads `charge(t, m) && ...`. */
  const charge = (text: string, meter: FilterMeter | undefined, extra = 0): true => {
    if (meter) meter.left -= 1 + ((text.length * cost) >>> 12) + extra;
    return true;
  };
  switch (op) {
    case "==":
      return (t, m) => charge(t, m) && t === value;
    case "!=":
      return (t, m) => charge(t, m) && t !== value;
    case "startsWith":
      return (t, m) => charge(t, m) && t.startsWith(value);
    case "endsWith":
      return (t, m) => charge(t, m) && t.endsWith(value);
    case "contains":
      return (t, m) => charge(t, m) && t.includes(value);
    case "icontains": {
      // Unicode simple case folding, as RE2's case-insensitive match in the stores.
      const re = new RegExp(literalSource(value), "iu");
      return (t, m) => charge(t, m, t.length >>> 10) && re.test(t);
    }
    case "matches": {
      const re = compileRegex(value);
      return (t, m) => re.test(t, matchedLength, m);
    }
    default:
      return () => false;
  }
}

/** The body test: a binary body's form is searched for the needle's bytes; `matches` reads text bodies only. */
function bodyTest(op: string, value: string): TextTest {
  if (op === "matches") {
    const text = textTest(op, value, maxMatchedBodyLength);
    return (t, m) => !isBinaryForm(t) && text(t, m);
  }
  const asText = textTest(op === "!=" ? "==" : op, value, maxMatchedBodyLength);
  const bytes = binaryNeedle(value);
  const asBytes = op === "==" || op === "!=" ? textTest("==", binaryMarker + bytes, 0) : textTest(op, bytes, 0);
  const isEqual = (t: string, m: FilterMeter | undefined) => (isBinaryForm(t) ? asBytes(t, m) : asText(t, m));
  return op === "!=" ? (t, m) => !isEqual(t, m) : isEqual;
}

/** A keyed header test: true when some header of that name passes (`!=`: when none equals the value). */
function headerTest(op: string, name: string, value: string): TextTest {
  if (op === "exists") return (form, m) => charge1(form, m) && form.includes(`\n${name}: `);
  const test = textTest(op === "!=" ? "==" : op, op === "matches" ? value : headerLineValue(value), maxMatchedUrlLength);
  const some: TextTest = (form, m) => {
    charge1(form, m);
    for (const v of headerValues(form, name)) if (test(v, m)) return true;
    return false;
  };
  return op === "!=" ? (form, m) => !some(form, m) : some;
}

/** Scanning a form for one name: a step per 4 Ki characters. Always true. */
function charge1(text: string, meter: FilterMeter | undefined): true {
  if (meter) meter.left -= 1 + (text.length >>> 12);
  return true;
}

/**
 * Compiles a parsed filter into one predicate: regexes are compiled once here, not per event.
 * A parsed expression is trusted to be well-formed (parseFilter checked field/operator/value pairs).
 * With a meter, evaluation is bounded by its steps (see FilterMeter); `index` is the chip the expression is.
 */
export function compileFilter(expr: FilterExpr | null, meter?: FilterMeter, index = 0): EventPredicate {
  if (expr === null) return () => true;
  switch (expr.kind) {
    case "and": {
      const left = compileFilter(expr.left, meter, index);
      const right = compileFilter(expr.right, meter, index);
      return (e) => left(e) && right(e);
    }
    case "or": {
      const left = compileFilter(expr.left, meter, index);
      const right = compileFilter(expr.right, meter, index);
      return (e) => left(e) || right(e);
    }
    case "not": {
      const inner = compileFilter(expr.expr, meter, index);
      return (e) => !inner(e);
    }
    case "compare":
      return compileLeaf(expr, meter, index);
  }
}

function compileLeaf(expr: CompareExpr, meter: FilterMeter | undefined, index: number): EventPredicate {
  const { field, op, value, pos, key } = expr;
  const spec = filterFields.get(field);
  if (!spec) return () => false;
  if (spec.kind === "tag") {
    const name = key ?? "";
    if (op === "exists") return (e) => hasTag(e, name);
    return metered(textTest(op, String(value), maxMatchedUrlLength), (e) => tag(e, name), meter, index, pos);
  }
  const get = read[field];
  if (!get) return () => false;
  if (spec.kind === "method") {
    const want = String(value).toUpperCase();
    return op === "==" ? (e) => e.http_req_method.toUpperCase() === want : (e) => e.http_req_method.toUpperCase() !== want;
  }
  const text = get as (e: TracedEvent) => string;
  if (spec.kind === "body") return metered(bodyTest(op, String(value)), text, meter, index, pos);
  if (spec.kind === "headers") {
    const test = key === undefined ? textTest(op, String(value), maxMatchedBodyLength) : headerTest(op, key, String(value));
    return metered(test, text, meter, index, pos);
  }
  if (spec.kind === "text" && typeof value === "string") {
    return metered(textTest(op, value, spec.maxMatchedLength ?? maxMatchedUrlLength), text, meter, index, pos);
  }
  const absent = spec.absent;
  if (absent !== undefined) return (e) => get(e) !== absent && compare(op, get(e), value);
  return (e) => compare(op, get(e), value);
}

/** The test over the text `of` gives, answering false once the meter is spent and naming this clause if it spent it. */
function metered(
  test: TextTest,
  of: (e: TracedEvent) => string,
  meter: FilterMeter | undefined,
  index: number,
  position: number,
): EventPredicate {
  if (!meter) return (e) => test(of(e), undefined);
  return (e) => {
    if (meter.left < 0) return false;
    const isMatch = test(of(e), meter);
    if (meter.left < 0) {
      meter.ranOutAt ??= { index, position };
      return false;
    }
    return isMatch;
  };
}

export type ChipsCompileResult = Result<{ predicate: EventPredicate }, FilterParseError & { index: number }> & { compileSteps: number };

/**
 * The committed chips, AND-ed, parsed and compiled (everything matches when there are none). With a meter, a
 * clause that runs it out is named by its chip's index and its position within that chip. `compileSteps` is what
 * parsing and compiling cost, in the meter's steps (about four per NFA state: each pattern is compiled to check it,
 * then to run), refused or not.
 */
export function compileFilterChips(chips: readonly string[], meter?: FilterMeter): ChipsCompileResult {
  const parsed = parseFilterChipList(chips);
  const compileSteps = 4 * parsed.regexStates + chips.length;
  if (!parsed.ok) return { ok: false, error: parsed.error, compileSteps };
  const predicates = parsed.exprs.map((expr, index) => compileFilter(expr, meter, index));
  if (predicates.length === 0) return { ok: true, predicate: () => true, compileSteps };
  if (predicates.length === 1) return { ok: true, predicate: predicates[0]!, compileSteps };
  return { ok: true, predicate: (e) => predicates.every((p) => p(e)), compileSteps };
}

/**
 * The chips as a predicate that gives each event `stepsPerEvent` filter steps: an event that needs more does not
 * match (the live hub dropped it for such a viewer too). Null when the chips do not parse.
 */
export function boundedPredicate(chips: readonly string[], stepsPerEvent = filterStepsPerEvent): EventPredicate | null {
  const meter = filterMeter();
  const compiled = compileFilterChips(chips, meter);
  if (!compiled.ok) return null;
  const predicate = compiled.predicate;
  return (e) => {
    meter.left = stepsPerEvent;
    return predicate(e) && meter.left >= 0;
  };
}
