import { type CompareOp, type FilterExpr, type FilterField, type FilterParseError, type StringOp, tlsStates } from "~/lib/filter/ast.ts";
import { compileRegex, RegexSyntaxError } from "~/lib/filter/regex.ts";
import { unansweredReasons } from "~/lib/protocol/event.ts";
import type { Result } from "~/lib/result.ts";

/** Bounds that keep a hostile filter cheap to parse and to evaluate on every event. */
export const filterLimits = {
  maxLength: 4096,
  maxDepth: 32,
  maxClauses: 64,
  maxChips: 32,
  /** NFA states of all `matches` patterns together: what compiling a config costs (a few ms at most). */
  maxRegexStates: 16_000,
} as const;

export type ParseResult = Result<{ expr: FilterExpr }, FilterParseError>;

type Token =
  | { k: "lparen" | "rparen" | "and" | "or" | "end"; pos: number; text: string }
  | { k: "cmp"; op: CompareOp; pos: number; text: string }
  | { k: "ident"; pos: number; text: string }
  | { k: "number"; value: number; unit: string; pos: number; text: string }
  | { k: "string"; value: string; pos: number; text: string };

class FilterSyntaxError extends Error {
  constructor(
    message: string,
    readonly position: number,
  ) {
    super(message);
  }
}

const fields: readonly FilterField[] = [
  "request.method",
  "response.status",
  "request.url",
  "duration",
  "tls",
  "tls.reason",
  "tls.server_name",
  "response.unanswered",
];
const stringOps: readonly StringOp[] = ["startsWith", "endsWith", "contains", "matches"];
const fieldList = "request.method, response.status, request.url, duration, tls, tls.reason, tls.server_name or response.unanswered";

/** Microseconds per unit; a bare duration is in milliseconds. */
const durationUnits: Record<string, number> = { us: 1, µs: 1, ms: 1000, s: 1_000_000 };

function describe(tok: Token): string {
  if (tok.k === "end") return "the end of the filter";
  const text = tok.text.length > 24 ? `${tok.text.slice(0, 24)}…` : tok.text;
  return `"${text}"`;
}

function tokenize(src: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < src.length) {
    const ch = src[i]!;
    if (/\s/.test(ch)) {
      i++;
      continue;
    }
    const start = i;
    const two = src.slice(i, i + 2);
    if (ch === "(" || ch === ")") {
      tokens.push({ k: ch === "(" ? "lparen" : "rparen", pos: i, text: ch });
      i++;
    } else if (two === "&&" || two === "||") {
      tokens.push({ k: two === "&&" ? "and" : "or", pos: i, text: two });
      i += 2;
    } else if (two === "==" || two === "!=" || two === "<=" || two === ">=") {
      tokens.push({ k: "cmp", op: two, pos: i, text: two });
      i += 2;
    } else if (ch === "<" || ch === ">") {
      tokens.push({ k: "cmp", op: ch, pos: i, text: ch });
      i++;
    } else if (ch === "=") {
      throw new FilterSyntaxError('use "==" to compare', i);
    } else if (ch === "&" || ch === "|") {
      throw new FilterSyntaxError(`use "${ch}${ch}" to combine conditions`, i);
    } else if (ch === '"' || ch === "'") {
      const [value, end] = readString(src, i);
      tokens.push({ k: "string", value, pos: start, text: src.slice(start, end) });
      i = end;
    } else if (/[0-9]/.test(ch) || (ch === "-" && /[0-9]/.test(src[i + 1] ?? "")) || (ch === "." && /[0-9]/.test(src[i + 1] ?? ""))) {
      const m = /^-?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?/.exec(src.slice(i, i + 64))!;
      i += m[0].length;
      const unitMatch = /^(µs|[A-Za-z]+)/.exec(src.slice(i, i + 16));
      const unit = unitMatch ? unitMatch[0] : "";
      i += unit.length;
      tokens.push({ k: "number", value: Number(m[0]), unit, pos: start, text: src.slice(start, i) });
    } else if (/[A-Za-z_]/.test(ch)) {
      const m = /^[A-Za-z_][A-Za-z0-9_.]*/.exec(src.slice(i, i + 64))!;
      i += m[0].length;
      tokens.push({ k: "ident", pos: start, text: m[0] });
    } else {
      const cp = String.fromCodePoint(src.codePointAt(i)!);
      throw new FilterSyntaxError(`unexpected character "${cp}"`, i);
    }
  }
  tokens.push({ k: "end", pos: src.length, text: "" });
  return tokens;
}

function readString(src: string, start: number): [string, number] {
  const quote = src[start]!;
  let out = "";
  let i = start + 1;
  while (i < src.length) {
    const ch = src[i]!;
    if (ch === quote) return [out, i + 1];
    if (ch === "\\") {
      const esc = src[i + 1];
      if (esc === undefined) break;
      const simple: Record<string, string> = { '"': '"', "'": "'", "\\": "\\", "/": "/", n: "\n", t: "\t", r: "\r", b: "\b", f: "\f" };
      if (esc in simple) {
        out += simple[esc];
        i += 2;
        continue;
      }
      if (esc === "u") {
        const hex = /^[0-9a-fA-F]{4}/.exec(src.slice(i + 2, i + 6));
        if (!hex) throw new FilterSyntaxError("\\u needs four hex digits", i);
        out += String.fromCharCode(Number.parseInt(hex[0], 16));
        i += 6;
        continue;
      }
      throw new FilterSyntaxError(`unknown escape "\\${esc}" in string (write "\\\\" for a backslash)`, i);
    }
    out += ch;
    i++;
  }
  throw new FilterSyntaxError(`unterminated string: missing closing ${quote}`, start);
}

class Parser {
  private i = 0;
  private depth = 0;
  private clauses = 0;
  /** The NFA states of the patterns compiled so far. */
  regexStates = 0;
  constructor(
    private readonly tokens: Token[],
    private readonly maxRegexStates: number,
  ) {}

  private get tok(): Token {
    return this.tokens[this.i]!;
  }

  parse(): FilterExpr {
    if (this.tok.k === "end") throw new FilterSyntaxError("empty filter", 0);
    const expr = this.or();
    const rest = this.tokens[this.i]!;
    if (rest.k === "rparen") throw new FilterSyntaxError('unexpected ")" without a matching "("', rest.pos);
    if (rest.k !== "end") throw new FilterSyntaxError(`expected "&&" or "||" before ${describe(rest)}`, rest.pos);
    return expr;
  }

  private or(): FilterExpr {
    let left = this.and();
    while (this.tok.k === "or") {
      this.i++;
      left = { kind: "or", left, right: this.and() };
    }
    return left;
  }

  private and(): FilterExpr {
    let left = this.primary();
    while (this.tok.k === "and") {
      this.i++;
      left = { kind: "and", left, right: this.primary() };
    }
    return left;
  }

  private primary(): FilterExpr {
    const tok = this.tok;
    if (tok.k === "lparen") {
      if (++this.depth > filterLimits.maxDepth) {
        throw new FilterSyntaxError(`parentheses nested deeper than ${filterLimits.maxDepth}`, tok.pos);
      }
      this.i++;
      const inner = this.or();
      if (this.tok.k !== "rparen") {
        throw new FilterSyntaxError(`expected ")" to close the "(" at ${tok.pos}, found ${describe(this.tok)}`, this.tok.pos);
      }
      this.i++;
      this.depth--;
      return inner;
    }
    if (tok.k === "ident") return this.clause(tok);
    if (tok.k === "end") throw new FilterSyntaxError(`expected a condition on ${fieldList}`, tok.pos);
    throw new FilterSyntaxError(`expected a field (${fieldList}), found ${describe(tok)}`, tok.pos);
  }

  private clause(fieldTok: Token & { k: "ident" }): FilterExpr {
    if (++this.clauses > filterLimits.maxClauses) {
      throw new FilterSyntaxError(`more than ${filterLimits.maxClauses} conditions`, fieldTok.pos);
    }
    const field = fields.find((f) => f === fieldTok.text || f.toLowerCase() === fieldTok.text.toLowerCase());
    if (!field) throw new FilterSyntaxError(`unknown field "${fieldTok.text}": use ${fieldList}`, fieldTok.pos);
    this.i++;
    const opTok = this.tok;
    const op = this.operator(field, opTok);
    this.i++;
    const valueTok = this.tok;
    const value = this.value(field, op, valueTok);
    this.i++;
    return { kind: "compare", field, op, value, pos: fieldTok.pos };
  }

  private operator(field: FilterField, tok: Token): CompareOp | StringOp {
    const allowed: Record<FilterField, readonly (CompareOp | StringOp)[]> = {
      "request.method": ["==", "!="],
      "response.status": ["==", "!=", "<", ">", "<=", ">="],
      "request.url": ["startsWith", "endsWith", "contains", "matches", "==", "!="],
      duration: ["<", ">", "<=", ">="],
      tls: ["==", "!="],
      "tls.reason": ["==", "!=", "contains"],
      "tls.server_name": ["==", "!=", "startsWith", "endsWith", "contains"],
      "response.unanswered": ["==", "!="],
    };
    const ops = allowed[field];
    const candidate =
      tok.k === "cmp" ? tok.op : tok.k === "ident" ? stringOps.find((o) => o.toLowerCase() === tok.text.toLowerCase()) : undefined;
    if (candidate && ops.includes(candidate)) return candidate;
    const list = ops.join(", ");
    if (candidate) throw new FilterSyntaxError(`${field} cannot use "${candidate}": use ${list}`, tok.pos);
    throw new FilterSyntaxError(`expected an operator after ${field} (${list}), found ${describe(tok)}`, tok.pos);
  }

  private value(field: FilterField, op: CompareOp | StringOp, tok: Token): string | number {
    switch (field) {
      case "request.method": {
        if (tok.k !== "string") throw new FilterSyntaxError(`expected a quoted method, e.g. "GET", found ${describe(tok)}`, tok.pos);
        if (!/^[!#$%&'*+\-.^_`|~0-9A-Za-z]{1,32}$/.test(tok.value)) {
          throw new FilterSyntaxError(`"${tok.value.slice(0, 32)}" is not an HTTP method`, tok.pos);
        }
        // Methods are case-sensitive on the wire but always upper case in practice; "post" means POST.
        return tok.value.toUpperCase();
      }
      case "response.status": {
        if (tok.k !== "number" || tok.unit !== "" || !Number.isInteger(tok.value) || tok.value < 0 || tok.value > 999) {
          throw new FilterSyntaxError(`expected a status code (a whole number, e.g. 404), found ${describe(tok)}`, tok.pos);
        }
        return tok.value;
      }
      case "request.url": {
        if (tok.k !== "string") throw new FilterSyntaxError(`expected a quoted string, e.g. "/api/", found ${describe(tok)}`, tok.pos);
        if (op === "matches") {
          try {
            this.regexStates += compileRegex(tok.value).size;
            if (this.regexStates > this.maxRegexStates) {
              throw new FilterSyntaxError("regexes too complex in all filters together: use fewer or shorter repeats", tok.pos);
            }
          } catch (err) {
            if (err instanceof RegexSyntaxError) throw new FilterSyntaxError(err.message, this.regexPosition(tok, err.position));
            throw err;
          }
        }
        return tok.value;
      }
      case "tls": {
        const states = tlsStates.map((state) => `"${state}"`).join(" or ");
        if (tok.k !== "string") throw new FilterSyntaxError(`expected ${states}, found ${describe(tok)}`, tok.pos);
        const state = tlsStates.find((x) => x === tok.value.toLowerCase());
        if (!state) throw new FilterSyntaxError(`tls is ${states}, not "${tok.value.slice(0, 32)}"`, tok.pos);
        return state;
      }
      case "tls.reason":
      case "tls.server_name": {
        if (tok.k !== "string") {
          const example = field === "tls.reason" ? '"mutual TLS"' : '"api.example.com"';
          throw new FilterSyntaxError(`expected a quoted string, e.g. ${example}, found ${describe(tok)}`, tok.pos);
        }
        return tok.value;
      }
      case "response.unanswered": {
        // "" is an answered request: `response.unanswered != ""` finds every request that got no answer.
        const reasons = ["", ...unansweredReasons].map((reason) => `"${reason}"`).join(", ");
        if (tok.k !== "string") throw new FilterSyntaxError(`expected one of ${reasons}, found ${describe(tok)}`, tok.pos);
        const reason = ["", ...unansweredReasons].find((x) => x === tok.value.toLowerCase().replace(" ", "_"));
        if (reason === undefined)
          throw new FilterSyntaxError(`response.unanswered is one of ${reasons}, not "${tok.value.slice(0, 32)}"`, tok.pos);
        return reason;
      }
      case "duration": {
        if (tok.k !== "number" || tok.value < 0) {
          throw new FilterSyntaxError(`expected a duration, e.g. 250ms, 1.5s or 800us, found ${describe(tok)}`, tok.pos);
        }
        const factor = durationUnits[tok.unit === "" ? "ms" : tok.unit];
        if (factor === undefined) {
          throw new FilterSyntaxError(`unknown duration unit "${tok.unit}": use us, ms or s`, tok.pos + tok.text.length - tok.unit.length);
        }
        const micros = Math.round(tok.value * factor);
        if (!Number.isSafeInteger(micros)) throw new FilterSyntaxError("duration out of range", tok.pos);
        return micros;
      }
    }
  }

  /** Maps a position inside the decoded pattern back to the filter text, stepping over the string's escapes. */
  private regexPosition(tok: Token, inPattern: number): number {
    const raw = tok.text.slice(1, -1);
    let rawAt = 0;
    for (let decoded = 0; decoded < inPattern && rawAt < raw.length; decoded++) {
      rawAt += raw[rawAt] !== "\\" ? 1 : raw[rawAt + 1] === "u" ? 6 : 2;
    }
    return tok.pos + 1 + rawAt;
  }
}

/** Parses one filter expression. Positions are 0-based indexes into `source` (UTF-16 code units, as JS strings). */
export function parseFilter(source: string): ParseResult {
  const result = parseCounting(source);
  return result.ok ? { ok: true, expr: result.expr } : { ok: false, error: result.error };
}

function parseCounting(source: string, maxRegexStates: number = filterLimits.maxRegexStates): ParseResult & { regexStates: number } {
  if (source.length > filterLimits.maxLength) {
    return {
      ok: false,
      error: { message: `filter longer than ${filterLimits.maxLength} characters`, position: filterLimits.maxLength },
      regexStates: 0,
    };
  }
  let parser: Parser | null = null;
  try {
    parser = new Parser(tokenize(source), maxRegexStates);
    const expr = parser.parse();
    return { ok: true, expr, regexStates: parser.regexStates };
  } catch (err) {
    if (err instanceof FilterSyntaxError) {
      return { ok: false, error: { message: err.message, position: err.position }, regexStates: parser?.regexStates ?? 0 };
    }
    throw err;
  }
}

export type ChipsParseResult = Result<{ expr: FilterExpr | null }, FilterParseError & { index: number }>;

/** `regexStates`: the NFA states compiled while parsing (what it cost), whether or not the chips parsed. */
export type ChipListParseResult = Result<{ exprs: FilterExpr[] }, FilterParseError & { index: number }> & { regexStates: number };

/** Each chip parsed on its own, within the limits on chips and clauses; errors as parseFilterChips gives them. */
export function parseFilterChipList(chips: readonly string[]): ChipListParseResult {
  if (chips.length > filterLimits.maxChips) {
    return {
      ok: false,
      error: { message: `more than ${filterLimits.maxChips} filters`, position: 0, index: filterLimits.maxChips },
      regexStates: 0,
    };
  }
  const exprs: FilterExpr[] = [];
  let clauses = 0;
  let regexStates = 0;
  for (const [index, chip] of chips.entries()) {
    const result = parseCounting(chip, filterLimits.maxRegexStates - regexStates);
    regexStates += result.regexStates;
    if (!result.ok) return { ok: false, error: { ...result.error, index }, regexStates };
    clauses += countClauses(result.expr);
    if (clauses > filterLimits.maxClauses) {
      return {
        ok: false,
        error: { message: `more than ${filterLimits.maxClauses} conditions in all filters`, position: 0, index },
        regexStates,
      };
    }
    exprs.push(result.expr);
  }
  return { ok: true, exprs, regexStates };
}

/**
 * The UI's committed filters (chips), AND-ed: null when there are none (everything matches).
 * An error names the chip (`index`) and the position inside that chip's text.
 */
export function parseFilterChips(chips: readonly string[]): ChipsParseResult {
  const list = parseFilterChipList(chips);
  if (!list.ok) return { ok: false, error: list.error };
  let expr: FilterExpr | null = null;
  for (const chip of list.exprs) expr = expr ? { kind: "and", left: expr, right: chip } : chip;
  return { ok: true, expr };
}

/** One expression text equivalent to the chips AND-ed (each chip parenthesised); "" for none. */
export function joinFilterChips(chips: readonly string[]): string {
  return chips.map((chip) => `(${chip})`).join(" && ");
}

export function countClauses(expr: FilterExpr): number {
  return expr.kind === "compare" ? 1 : countClauses(expr.left) + countClauses(expr.right);
}
