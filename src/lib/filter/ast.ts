/**
 * The filter language, parsed once and shared by the live view's evaluator and
 * the store's SQL compiler. Examples:
 *   request.method == "POST" && response.status >= 500
 *   request.url contains "/api/" || (request.url matches "^/users/[0-9]+$" && duration > 250ms)
 *   tls == "not decrypted" && tls.reason == "mutual TLS"
 *   tls == "decrypted" && tls.server_name endsWith ".stripe.com"
 *   response.unanswered != "" && request.url startsWith "/api/"
 */
export type FilterField =
  | "request.method"
  | "response.status"
  | "request.url"
  | "duration"
  | "tls"
  | "tls.reason"
  | "tls.server_name"
  | "response.unanswered";

export type CompareOp = "==" | "!=" | "<" | ">" | "<=" | ">=";
export type StringOp = "startsWith" | "endsWith" | "contains" | "matches";

export type FilterExpr =
  | { kind: "compare"; field: FilterField; op: CompareOp | StringOp; value: string | number; pos: number }
  | { kind: "and"; left: FilterExpr; right: FilterExpr }
  | { kind: "or"; left: FilterExpr; right: FilterExpr };

/** The values of the `tls` field: the event's tags.tls (a plaintext event has neither). */
export const tlsStates = ["decrypted", "not decrypted"] as const;

/** duration values are normalised to microseconds (the unit of TracedEvent.http_duration). */
export type FilterParseError = { message: string; position: number };
