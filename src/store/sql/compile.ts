import { AppError } from "~/lib/errors.ts";
import { type CompareExpr, type CompareOp, type FilterExpr, type FilterOp, tlsStates } from "~/lib/filter/ast.ts";
import { binaryMarker, binaryNeedle, headerLineValue } from "~/lib/filter/content.ts";
import { filterFields, headerNamePattern, maxNeedleLength, operatorsOf, tagKeyPattern } from "~/lib/filter/fields.ts";
import { compileRegex, RegexSyntaxError, storeRegexCost } from "~/lib/filter/regex.ts";
import { eventFields } from "~/lib/protocol/event.ts";
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
function checkPattern(value: unknown, budget: RegexBudget, weight = 1): string {
  const pattern = checkString(value, limits.regex);
  let regex: ReturnType<typeof compileRegex>;
  try {
    regex = compileRegex(pattern);
  } catch (err) {
    bad(err instanceof RegexSyntaxError ? `invalid regular expression: ${err.message}` : "invalid regular expression");
  }
  const cost = storeRegexCost(regex, budget) * weight;
  budget.cost += cost;
  if (budget.cost > limits.regexCost) {
    bad(
      cost > weight
        ? `regular expression "${pattern}" is too costly to run over stored events: it cannot be matched with a small automaton (fewer repeats, or anchoring it, help)`
        : weight > 1
          ? `a body or headers "matches" reads every stored body: one per search, with no other regular expression`
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

/** A `matches` over a whole body or a side's headers reads up to a megabyte per event: it costs the query's whole allowance. */
const contentRegexCost = limits.regexCost;

function checkNeedle(value: unknown): string {
  if (typeof value === "string" && value.length > maxNeedleLength) bad(`a body or header search is at most ${maxNeedleLength} characters`);
  return checkString(value);
}

/** The condition `op value` on a text expression (a column, a tag, a header value). */
function textCondition(d: Dialect, text: string, op: FilterOp, value: unknown, regexBudget: RegexBudget, regexCost = 1): string {
  if (op === "matches") return d.matches(text, d.literal(checkPattern(value, regexBudget, regexCost)));
  const lit = d.literal(checkString(value));
  switch (op) {
    case "==":
    case "!=":
      return `${text} ${compareSql[op]} ${lit}`;
    case "startsWith":
      return d.startsWith(text, lit);
    case "endsWith":
      return d.endsWith(text, lit);
    case "contains":
      return d.contains(text, checkString(value));
    case "icontains":
      return d.icontains(text, checkString(value));
    default:
      return bad(`unknown text operator ${String(op).slice(0, 20)}`);
  }
}

/**
 * A body's search form: text, or a binary body's marker and bytes (lib/filter/content.ts). A needle is searched as text
 * in text bodies and as its UTF-8 bytes in binary ones; `matches` reads text bodies only.
 */
function bodyCondition(d: Dialect, column: string, op: FilterOp, value: unknown, regexBudget: RegexBudget): string {
  const isBinary = d.startsWith(column, d.literal(binaryMarker));
  if (op === "matches") return `NOT ${isBinary} AND ${textCondition(d, column, op, value, regexBudget, contentRegexCost)}`;
  const needle = checkNeedle(value);
  const bytes = binaryNeedle(needle);
  if (op === "==" || op === "!=") {
    const equal = `${column} IN (${d.literal(needle)}, ${d.literal(binaryMarker + bytes)})`;
    return op === "==" ? equal : `NOT (${equal})`;
  }
  if (op !== "contains" && op !== "icontains") bad(`a body supports contains, icontains, matches, == and !=`);
  const asText = textCondition(d, column, op, needle, regexBudget);
  if (bytes === needle) return asText;
  return `((NOT ${isBinary} AND ${asText}) OR (${isBinary} AND ${textCondition(d, column, op, bytes, regexBudget)}))`;
}

/** A keyed header test over a side's headers form: some header of that name passes (`!=`: none is equal). */
function headerCondition(d: Dialect, form: string, name: string, op: FilterOp, value: unknown, regexBudget: RegexBudget): string {
  const line = `\n${name}: `;
  if (op === "exists") return d.contains(form, line);
  if (op === "==" || op === "!=") {
    const equal = d.contains(form, `${line}${headerLineValue(checkNeedle(value))}\n`);
    return op === "==" ? equal : `NOT ${equal}`;
  }
  if (op === "startsWith") return d.contains(form, line + headerLineValue(checkNeedle(value)));
  const needle = op === "matches" ? value : headerLineValue(checkNeedle(value));
  return d.anyHeader(form, name, (x) => textCondition(d, x, op, needle, regexBudget));
}

function checkKey(key: unknown, pattern: RegExp, what: string): string {
  if (typeof key !== "string" || !pattern.test(key)) bad(`invalid ${what} name`);
  return key;
}

function compileLeaf(d: Dialect, e: CompareExpr, regexBudget: RegexBudget, fields: EventFields): string {
  const spec = typeof e.field === "string" ? filterFields.get(e.field) : undefined;
  if (!spec) return bad("unknown filter field");
  const isKeyed = e.key !== undefined;
  if (!operatorsOf(spec, isKeyed).includes(e.op)) bad(`${spec.name} supports ${operatorsOf(spec, isKeyed).join(", ")}`);
  if (spec.kind === "tag") {
    const key = checkKey(e.key, tagKeyPattern, "tag");
    if (e.op === "exists") return d.hasTag(key);
    return textCondition(d, d.tag(key), e.op, e.value, regexBudget);
  }
  if (spec.name === "tls" || spec.name === "tls.reason") {
    const text = d.tag(spec.name === "tls" ? "tls" : "tls_reason");
    if (spec.kind === "enum") {
      const state = tlsStates.find((x) => x === e.value);
      if (!state) bad(`tls is ${tlsStates.map((x) => `"${x}"`).join(" or ")}`);
      return `${text} ${compareSql[e.op as CompareOp]} ${d.literal(state)}`;
    }
    return textCondition(d, text, e.op, e.value, regexBudget);
  }
  // The column behind a readable name, as the field table maps it.
  const column = fields.filterColumns.get(spec.name) ?? bad(`${spec.name} is not a stored column`);
  switch (spec.kind) {
    case "method":
      // Case-insensitive, like the live view's evaluator.
      return `upper(${column}) ${compareSql[e.op as CompareOp]} ${d.literal(checkString(e.value, 64).toUpperCase())}`;
    case "status":
    case "number":
    case "size":
    case "duration": {
      if (!isCompareOp(e.op)) bad(`${spec.name} supports ${orderOps}`);
      const cond = `${column} ${compareSql[e.op]} ${d.literal(checkNumber(e.value))}`;
      return spec.absent === undefined ? cond : `${column} != ${d.literal(spec.absent)} AND ${cond}`;
    }
    case "flag": {
      if (typeof e.value !== "boolean") bad(`${spec.name} is true or false`);
      return `${column} ${compareSql[e.op as CompareOp]} ${e.value ? 1 : 0}`;
    }
    case "enum": {
      const values = spec.values ?? [];
      const value = values.find((v) => v === e.value) ?? bad(`${spec.name} is ${values.map((v) => `"${v}"`).join(" or ")}`);
      // direction is the http_is_outgoing flag: inbound 0, outbound 1.
      const stored = spec.name === "direction" ? values.indexOf(value) : d.literal(value);
      return `${column} ${compareSql[e.op as CompareOp]} ${stored}`;
    }
    case "body":
      return bodyCondition(d, column, e.op, e.value, regexBudget);
    case "headers": {
      if (!isKeyed) {
        if (e.op === "matches") return textCondition(d, column, e.op, e.value, regexBudget, contentRegexCost);
        return textCondition(d, column, e.op, checkNeedle(e.value), regexBudget);
      }
      return headerCondition(d, column, checkKey(e.key, headerNamePattern, "header"), e.op, e.value, regexBudget);
    }
    case "text":
      return textCondition(d, column, e.op, e.value, regexBudget);
  }
}

const orderOps = "==, !=, <, >, <=, >=";

type ExprBudget = { nodes: number; regex: RegexBudget };

function compileExpr(d: Dialect, e: FilterExpr, depth: number, budget: ExprBudget, fields: EventFields): string {
  if (typeof e !== "object" || e === null) bad("invalid filter expression");
  if (depth > limits.expressionDepth) bad("filter expression nested too deeply");
  if (--budget.nodes < 0) bad("filter expression too large");
  if (e.kind === "compare") return `(${compileLeaf(d, e, budget.regex, fields)})`;
  if (e.kind === "not") return `(NOT ${compileExpr(d, e.expr, depth + 1, budget, fields)})`;
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
