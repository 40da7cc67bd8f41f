import type { FilterExpr, FilterParseError } from "~/lib/filter/ast.ts";
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
 * `matches` looks at most at this many characters of the URL: the matcher is linear, this caps the constant.
 * Captured paths are far shorter in practice; on a longer one a match must lie within the prefix.
 */
export const maxMatchedUrlLength = 4096;

/** A tag's value, "" when the event has none (as the stores read it). */
function tag(e: TracedEvent, key: string): string {
  const tags = e.tags;
  return typeof tags === "object" && tags !== null && Object.hasOwn(tags, key) && typeof tags[key] === "string" ? tags[key] : "";
}

/** Field accessors over TracedEvent: request.url is the request line's path and query. */
const read = {
  "request.method": (e: TracedEvent) => e.http_req_method,
  "response.status": (e: TracedEvent) => e.http_resp_status_code,
  "request.url": (e: TracedEvent) => e.http_req_path,
  duration: (e: TracedEvent) => e.http_duration,
  tls: (e: TracedEvent) => tag(e, "tls"),
  "tls.reason": (e: TracedEvent) => tag(e, "tls_reason"),
  "tls.server_name": (e: TracedEvent) => e.tls_server_name,
  "response.unanswered": (e: TracedEvent) => e.http_unanswered,
} as const;

/** The text fields the string operators apply to. */
const textOf = {
  "request.url": read["request.url"],
  "tls.reason": read["tls.reason"],
  "tls.server_name": read["tls.server_name"],
} as const;

function compare(op: string, a: number | string, b: number | string): boolean {
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
    case "compare":
      break;
  }
  const { field, op, value, pos } = expr;
  if (field === "request.method") {
    const want = String(value).toUpperCase();
    return op === "==" ? (e) => e.http_req_method.toUpperCase() === want : (e) => e.http_req_method.toUpperCase() !== want;
  }
  if (field === "request.url" && op === "matches" && typeof value === "string") {
    const re = compileRegex(value);
    if (!meter) return (e) => re.test(e.http_req_path, maxMatchedUrlLength);
    return (e) => {
      if (meter.left < 0) return false;
      const isMatch = re.test(e.http_req_path, maxMatchedUrlLength, meter);
      if (meter.left < 0) meter.ranOutAt ??= { index, position: pos };
      return isMatch;
    };
  }
  const test = typeof value === "string" ? stringTest(op, value) : null;
  if (test && (field === "request.url" || field === "tls.reason" || field === "tls.server_name")) {
    const text = textOf[field];
    if (!meter) return (e) => test(text(e));
    const cost = String(value).length;
    return (e) => {
      if (meter.left < 0) return false;
      const t = text(e);
      meter.left -= 1 + ((t.length * cost) >>> 12);
      if (meter.left < 0) {
        meter.ranOutAt ??= { index, position: pos };
        return false;
      }
      return test(t);
    };
  }
  const get = read[field];
  return (e) => compare(op, get(e), value);
}

function stringTest(op: string, value: string): ((path: string) => boolean) | null {
  switch (op) {
    case "startsWith":
      return (path) => path.startsWith(value);
    case "endsWith":
      return (path) => path.endsWith(value);
    case "contains":
      return (path) => path.includes(value);
    default:
      return null;
  }
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
