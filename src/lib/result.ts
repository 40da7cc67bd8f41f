/**
 * What a parser or validator that does not throw gives back: `ok: true` with what it made, in named fields
 * (`result.expr`, `result.event`), or `ok: false` with why not. Fields both sides carry (what the work cost)
 * are added with an intersection: `Result<{ expr: FilterExpr }, FilterParseError> & { regexStates: number }`.
 */
export type Result<T extends object, E = string> = ({ ok: true } & T) | { ok: false; error: E };
