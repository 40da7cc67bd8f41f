import type { FilterExpr } from "~/lib/filter/ast.ts";
import { compileRegex } from "~/lib/filter/regex.ts";
import type { TracedEvent } from "~/lib/protocol/event.ts";

export type EventPredicate = (event: TracedEvent) => boolean;

/**
 * `matches` looks at most at this many characters of the URL: the matcher is linear, this caps the constant.
 * Captured paths are far shorter in practice; on a longer one a match must lie within the prefix.
 */
export const maxMatchedUrlLength = 4096;

/** Field accessors over TracedEvent: request.url is the request line's path and query. */
const read = {
  "request.method": (e: TracedEvent) => e.http_req_method,
  "response.status": (e: TracedEvent) => e.http_resp_status_code,
  "request.url": (e: TracedEvent) => e.http_req_path,
  duration: (e: TracedEvent) => e.http_duration,
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
 */
export function compileFilter(expr: FilterExpr | null): EventPredicate {
  if (expr === null) return () => true;
  switch (expr.kind) {
    case "and": {
      const left = compileFilter(expr.left);
      const right = compileFilter(expr.right);
      return (e) => left(e) && right(e);
    }
    case "or": {
      const left = compileFilter(expr.left);
      const right = compileFilter(expr.right);
      return (e) => left(e) || right(e);
    }
    case "compare":
      break;
  }
  const { field, op, value } = expr;
  if (field === "request.method") {
    const want = String(value).toUpperCase();
    return op === "==" ? (e) => e.http_req_method.toUpperCase() === want : (e) => e.http_req_method.toUpperCase() !== want;
  }
  if (field === "request.url" && typeof value === "string") {
    switch (op) {
      case "startsWith":
        return (e) => e.http_req_path.startsWith(value);
      case "endsWith":
        return (e) => e.http_req_path.endsWith(value);
      case "contains":
        return (e) => e.http_req_path.includes(value);
      case "matches": {
        const re = compileRegex(value);
        return (e) => re.test(e.http_req_path, maxMatchedUrlLength);
      }
    }
  }
  const get = read[field];
  return (e) => compare(op, get(e), value);
}

/** Evaluates a filter on one event (compile once with compileFilter when evaluating many). */
export function evaluateFilter(expr: FilterExpr | null, event: TracedEvent): boolean {
  return compileFilter(expr)(event);
}
