/**
 * The filter language, parsed once and shared by the live view's evaluator and
 * the store's SQL compiler. Examples:
 *   request.method == "POST" && response.status >= 500
 *   request.url contains "/api/" || (request.url matches "^/users/[0-9]+$" && duration > 250ms)
 */
export type FilterField = "request.method" | "response.status" | "request.url" | "duration";

export type CompareOp = "==" | "!=" | "<" | ">" | "<=" | ">=";
export type StringOp = "startsWith" | "endsWith" | "contains" | "matches";

export type FilterExpr =
  | { kind: "compare"; field: FilterField; op: CompareOp | StringOp; value: string | number; pos: number }
  | { kind: "and"; left: FilterExpr; right: FilterExpr }
  | { kind: "or"; left: FilterExpr; right: FilterExpr };

/** duration values are normalised to microseconds (the unit of TracedEvent.http_duration). */
export type FilterParseError = { message: string; position: number };
