/**
 * The filter language, parsed once and shared by the live view's evaluator and
 * the store's SQL compiler. Examples:
 *   request.method == "POST" && response.status >= 500
 *   request.url contains "/api/" || (request.url matches "^/users/[0-9]+$" && duration > 250ms)
 *   tls == "not decrypted" && tls.reason == "mutual TLS"
 *   response.body icontains "quota exceeded" && request.headers["x-request-id"] == "rid-5521"
 *   !(request.headers["authorization"] exists) && service == "checkout"
 *   db.system == "postgresql" && db.statement contains "FROM orders" && duration > 50ms
 *   ws.message contains "order" && ws.direction == "server"
 *   request.route == "/users/{id}" && response.status >= 500
 *   response.unanswered != "" && request.url startsWith "/api/"
 * The fields, their operators and values: fields.ts.
 */

/** A readable field name (fields.ts lists them): `request.url`, `request.headers`, `tags`. */
export type FilterField = string;

export type CompareOp = "==" | "!=" | "<" | ">" | "<=" | ">=";
export type StringOp = "startsWith" | "endsWith" | "contains" | "icontains" | "matches";
/** Takes no value: whether a header or tag is there. */
export type PresenceOp = "exists";
export type FilterOp = CompareOp | StringOp | PresenceOp;

export type CompareExpr = {
  kind: "compare";
  field: FilterField;
  /** The header name (lower case) or tag key of a keyed field: `request.headers["x-request-id"]`. */
  key?: string;
  op: FilterOp;
  /** Text, a number (durations in microseconds, sizes in bytes), or true/false for flags; "" for `exists`. */
  value: string | number | boolean;
  pos: number;
};

export type FilterExpr =
  | CompareExpr
  | { kind: "and"; left: FilterExpr; right: FilterExpr }
  | { kind: "or"; left: FilterExpr; right: FilterExpr }
  | { kind: "not"; expr: FilterExpr };

/** The values of `db.system`: the database protocols the agent reads. */
export const dbSystems = ["postgresql", "mysql", "redis"] as const;

/** The values of `ws.direction`: who sent the message. */
export const wsDirections = ["client", "server"] as const;

/** The values of `ws.opcode`. */
export const wsOpcodes = ["text", "binary", "close", "ping", "pong"] as const;

/** The values of the `tls` field: the event's tags.tls (a plaintext event has neither). */
export const tlsStates = ["decrypted", "not decrypted"] as const;

/** duration values are normalised to microseconds (the unit of TracedEvent.http_duration). */
export type FilterParseError = { message: string; position: number };
