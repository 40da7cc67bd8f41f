import { eventFieldTable } from "~/lib/protocol/event.ts";
import type { Clause } from "~/lib/protocol/query.ts";
import { filterFields } from "./fields.ts";

/**
 * A clause of the explorer's old column editor (`{ column, op, value }`, still in `filter` URLs people saved) as the
 * filter language writes it, so an old link opens the same search in the one filter input.
 */

const filterNameOf: ReadonlyMap<string, string> = new Map(
  eventFieldTable.flatMap((f) => ("filter" in f && typeof f.filter === "string" ? [[f.name, f.filter] as const] : [])),
);

const numberOp = {
  Equals: "==",
  NotEquals: "!=",
  GreaterThan: ">",
  GreaterThanOrEquals: ">=",
  LesserThan: "<",
  LesserThanOrEquals: "<=",
} as const;

const quoted = (s: string) => JSON.stringify(s);
const regexEscape = (s: string) => s.replace(/[\\^$.*+?()[\]{}|]/g, "\\$&");

/** A SQL LIKE pattern (`%` any text, `_` one character) as the filter language's closest test. */
function likeText(field: string, pattern: string): string {
  const inner = pattern.replace(/^%/, "").replace(/%$/, "");
  const isPlain = !/[%_]/.test(inner);
  const starts = pattern.startsWith("%");
  const ends = pattern.endsWith("%") && pattern.length > 1;
  if (isPlain) {
    if (starts && ends) return `${field} contains ${quoted(inner)}`;
    if (ends) return `${field} startsWith ${quoted(inner)}`;
    if (starts) return `${field} endsWith ${quoted(inner)}`;
    return `${field} == ${quoted(inner)}`;
  }
  let regex = "^";
  for (const ch of pattern) regex += ch === "%" ? ".*" : ch === "_" ? "." : regexEscape(ch);
  return `${field} matches ${quoted(`${regex}$`)}`;
}

/** The filter-language text of an old clause, or null when its column has no readable name. */
export function clauseToFilterText(clause: Clause): string | null {
  const field = filterNameOf.get(clause.column);
  const spec = field ? filterFields.get(field) : undefined;
  if (!field || !spec) return null;
  if (clause.type === "String") {
    if (clause.op === "Like") return likeText(field, clause.value);
    if (clause.op === "NotLike") return `!(${likeText(field, clause.value)})`;
    const op = clause.op === "Equals" ? "==" : "!=";
    if (spec.kind === "enum" || spec.kind === "method" || spec.kind === "text") return `${field} ${op} ${quoted(clause.value)}`;
    return null;
  }
  const op = numberOp[clause.op];
  if (spec.kind === "enum" && field === "direction") {
    // The flag as 0 or 1: the directions whose value passes the comparison.
    const passes = (v: number) =>
      ({
        "==": v === clause.value,
        "!=": v !== clause.value,
        ">": v > clause.value,
        ">=": v >= clause.value,
        "<": v < clause.value,
        "<=": v <= clause.value,
      })[op];
    const kept = [0, 1].filter(passes).map((v) => (v === 1 ? "outbound" : "inbound"));
    if (kept.length === 1) return `direction == ${quoted(kept[0]!)}`;
    return kept.length === 0 ? 'direction == "inbound" && direction == "outbound"' : null;
  }
  if (spec.kind === "duration") return `${field} ${op} ${clause.value}us`;
  if (spec.kind === "status" || spec.kind === "number" || spec.kind === "size") return `${field} ${op} ${clause.value}`;
  if (spec.kind === "flag") return `${field} ${op === "==" ? "==" : "!="} ${clause.value !== 0}`;
  return null;
}
