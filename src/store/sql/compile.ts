import { AppError } from "~/lib/errors.ts";
import { type CompareOp, type FilterExpr, type StringOp as FilterStringOp, tlsStates } from "~/lib/filter/ast.ts";
import { compileRegex, RegexSyntaxError, storeRegexCost } from "~/lib/filter/regex.ts";
import { eventFields, unansweredReasons } from "~/lib/protocol/event.ts";
import type { EventFields } from "~/lib/protocol/event-fields.ts";
import {
  type Clause,
  type NumberOp,
  numberOps,
  type QueryBase,
  type StringOp,
  stringOps,
  type TimestampFilter,
} from "~/lib/protocol/query.ts";
import type { Dialect } from "./dialect.ts";

/**
 * Compiles a query object (never SQL) into a WHERE condition for one engine. Everything that crossed a
 * socket is checked here: columns against a whitelist, operators against closed sets, value types,
 * sizes. Values reach SQL only through the dialect's literal function.
 */

export const limits = {
  clauses: 64,
  expressions: 32,
  expressionDepth: 32,
  expressionNodes: 256,
  stringValue: 4096,
  regex: 512,
  /**
   * What a query's `matches` may cost the engine per character of a row, summed over its patterns (storeRegexCost: 1
   * for a pattern RE2 runs as a small DFA, its NFA states otherwise). DuckDB checks a query's timeout only between
   * vectors of 2048 rows, so this bounds how far past its timeout a query can run: a unit over 2048 URLs of 8 KiB is
   * about 0.1-0.4 s on one thread.
   */
  regexCost: 4,
  /** Work (NFA states looked at) spent per query on finding what its patterns cost: a few milliseconds. */
  regexCostSteps: 200_000,
} as const;

/** What the `matches` of one query have cost so far, and the work left for costing the rest. */
type RegexBudget = { cost: number; steps: number };

const maxDateMs = 8.64e15;

function bad(message: string): never {
  throw new AppError("BAD_REQUEST", message);
}

const numberSql: Record<NumberOp, string> = {
  Equals: "=",
  GreaterThan: ">",
  GreaterThanOrEquals: ">=",
  LesserThan: "<",
  LesserThanOrEquals: "<=",
  NotEquals: "!=",
};

function checkString(value: unknown, max: number = limits.stringValue): string {
  if (typeof value !== "string") bad("string value expected");
  if (value.length > max) bad(`value longer than ${max} characters`);
  return value;
}

function checkNumber(value: unknown): number {
  if (typeof value !== "number" || !Number.isFinite(value)) bad("number value expected");
  return value;
}

/**
 * Patterns must lie in the RE2 subset the live view's matcher accepts: the same filter then means the
 * same thing live and in the store, and nothing the engines would treat differently gets through.
 */
function checkPattern(value: unknown, budget: RegexBudget): string {
  const pattern = checkString(value, limits.regex);
  let regex: ReturnType<typeof compileRegex>;
  try {
    regex = compileRegex(pattern);
  } catch (err) {
    bad(err instanceof RegexSyntaxError ? `invalid regular expression: ${err.message}` : "invalid regular expression");
  }
  const cost = storeRegexCost(regex, budget);
  budget.cost += cost;
  if (budget.cost > limits.regexCost) {
    bad(
      cost > 1
        ? `regular expression "${pattern}" is too costly to run over stored events: it cannot be matched with a small automaton (fewer repeats, or anchoring it, help)`
        : `too many regular expressions in one query: at most ${limits.regexCost}`,
    );
  }
  return pattern;
}

function compileClause(d: Dialect, clause: Clause, fields: EventFields): string {
  if (typeof clause !== "object" || clause === null) bad("invalid clause");
  if (clause.type === "Number") {
    if (!fields.numberClauseColumns.includes(clause.column)) bad("unknown number column");
    if (!(numberOps as readonly string[]).includes(clause.op)) bad("unknown number operator");
    return `${clause.column} ${numberSql[clause.op]} ${d.literal(checkNumber(clause.value))}`;
  }
  if (clause.type === "String") {
    if (!fields.stringClauseColumns.includes(clause.column)) bad("unknown string column");
    if (!(stringOps as readonly string[]).includes(clause.op)) bad("unknown string operator");
    const lit = d.literal(checkString(clause.value));
    const op: Record<StringOp, string> = {
      Equals: "=",
      DoesNotEqual: "!=",
      Like: "LIKE",
      NotLike: "NOT LIKE",
    };
    return `${clause.column} ${op[clause.op]} ${lit}`;
  }
  return bad("unknown clause type");
}

const compareSql: Record<CompareOp, string> = {
  "==": "=",
  "!=": "!=",
  "<": "<",
  ">": ">",
  "<=": "<=",
  ">=": ">=",
};
const isCompareOp = (op: unknown): op is CompareOp => typeof op === "string" && Object.hasOwn(compareSql, op);
const urlOps: readonly FilterStringOp[] = ["startsWith", "endsWith", "contains", "matches"];

function compileLeaf(d: Dialect, e: Extract<FilterExpr, { kind: "compare" }>, regexBudget: RegexBudget, fields: EventFields): string {
  // The column behind a readable name, as the field table maps it (tls and tls.reason are tags).
  const column = () => fields.filterColumns.get(e.field) ?? bad(`${e.field} is not a stored column`);
  switch (e.field) {
    case "request.method": {
      if (e.op !== "==" && e.op !== "!=") bad("request.method supports == and !=");
      // Case-insensitive, like the live view's evaluator.
      return `upper(${column()}) ${compareSql[e.op]} ${d.literal(checkString(e.value, 64).toUpperCase())}`;
    }
    case "response.status": {
      if (!isCompareOp(e.op)) bad("response.status supports ==, !=, <, >, <=, >=");
      return `${column()} ${compareSql[e.op]} ${d.literal(checkNumber(e.value))}`;
    }
    case "duration": {
      if (!isCompareOp(e.op)) bad("duration supports <, >, <=, >=");
      return `${column()} ${compareSql[e.op]} ${d.literal(checkNumber(e.value))}`;
    }
    case "request.url": {
      const url = column();
      if (isCompareOp(e.op) && (e.op === "==" || e.op === "!=")) {
        return `${url} ${compareSql[e.op]} ${d.literal(checkString(e.value))}`;
      }
      if (!urlOps.includes(e.op as FilterStringOp)) bad("request.url supports startsWith, endsWith, contains, matches");
      if (e.op === "matches") return d.matches(url, d.literal(checkPattern(e.value, regexBudget)));
      const lit = d.literal(checkString(e.value));
      if (e.op === "startsWith") return d.startsWith(url, lit);
      if (e.op === "endsWith") return d.endsWith(url, lit);
      return d.contains(url, lit);
    }
    case "tls": {
      if (e.op !== "==" && e.op !== "!=") bad("tls supports == and !=");
      const state = tlsStates.find((x) => x === e.value);
      if (!state) bad(`tls is ${tlsStates.map((x) => `"${x}"`).join(" or ")}`);
      return `${d.tag("tls")} ${compareSql[e.op]} ${d.literal(state)}`;
    }
    case "tls.reason":
    case "tls.server_name": {
      const text = e.field === "tls.reason" ? d.tag("tls_reason") : column();
      if (e.op === "==" || e.op === "!=") return `${text} ${compareSql[e.op]} ${d.literal(checkString(e.value))}`;
      const lit = d.literal(checkString(e.value));
      if (e.op === "contains") return d.contains(text, lit);
      if (e.field === "tls.server_name" && e.op === "startsWith") return d.startsWith(text, lit);
      if (e.field === "tls.server_name" && e.op === "endsWith") return d.endsWith(text, lit);
      return bad(
        e.field === "tls.reason"
          ? "tls.reason supports ==, != and contains"
          : "tls.server_name supports ==, !=, startsWith, endsWith, contains",
      );
    }
    case "response.unanswered": {
      if (e.op !== "==" && e.op !== "!=") bad("response.unanswered supports == and !=");
      const reason = ["", ...unansweredReasons].find((x) => x === e.value);
      if (reason === undefined) bad(`response.unanswered is one of ${unansweredReasons.map((x) => `"${x}"`).join(", ")} or ""`);
      return `${column()} ${compareSql[e.op]} ${d.literal(reason)}`;
    }
    default:
      return bad("unknown filter field");
  }
}

type ExprBudget = { nodes: number; regex: RegexBudget };

function compileExpr(d: Dialect, e: FilterExpr, depth: number, budget: ExprBudget, fields: EventFields): string {
  if (typeof e !== "object" || e === null) bad("invalid filter expression");
  if (depth > limits.expressionDepth) bad("filter expression nested too deeply");
  if (--budget.nodes < 0) bad("filter expression too large");
  if (e.kind === "compare") return `(${compileLeaf(d, e, budget.regex, fields)})`;
  if (e.kind === "and" || e.kind === "or") {
    const joiner = e.kind === "and" ? "AND" : "OR";
    return `(${compileExpr(d, e.left, depth + 1, budget, fields)} ${joiner} ${compileExpr(d, e.right, depth + 1, budget, fields)})`;
  }
  return bad("invalid filter expression");
}

/** Microseconds of a millisecond bound (event time is stored in microseconds). */
export function toMicros(ms: number): number {
  return Math.round(ms * 1000);
}

export function checkRange(range: TimestampFilter | null | undefined, what: string): TimestampFilter {
  if (typeof range !== "object" || range === null) bad(`${what} time range required`);
  const { lowerMs, upperMs } = range;
  if (!Number.isFinite(lowerMs) || !Number.isFinite(upperMs)) bad(`${what} time range must be numbers`);
  // Callers check ranges against the real window (lib/time/bounds.ts) where they enter; here only what the
  // SQL can hold: a JavaScript date's range, whose microseconds fit a 64-bit integer.
  if (Math.abs(lowerMs) > maxDateMs || Math.abs(upperMs) > maxDateMs) bad(`${what} time range is out of range`);
  if (upperMs <= lowerMs) bad(`${what} time range is empty`);
  return { lowerMs, upperMs };
}

/** The condition of a query over one time range: bounds, clauses, and filter expressions; columns from `fields`. */
export function compileWhere(d: Dialect, query: QueryBase, range: TimestampFilter, fields: EventFields = eventFields): string {
  const parts = [`time >= ${d.literal(toMicros(range.lowerMs))}`, `time < ${d.literal(toMicros(range.upperMs))}`];
  const clauses = query.filter?.clauses ?? [];
  if (!Array.isArray(clauses)) bad("clauses must be a list");
  if (clauses.length > limits.clauses) bad("too many clauses");
  for (const clause of clauses) parts.push(compileClause(d, clause, fields));
  const expressions = query.expressions ?? [];
  if (!Array.isArray(expressions)) bad("expressions must be a list");
  if (expressions.length > limits.expressions) bad("too many filter expressions");
  const budget = { nodes: limits.expressionNodes, regex: { cost: 0, steps: limits.regexCostSteps } };
  for (const e of expressions) parts.push(compileExpr(d, e, 0, budget, fields));
  return parts.join(" AND ");
}
