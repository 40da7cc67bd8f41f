import type { CompareOp, FilterExpr, FilterOp, FilterParseError } from "~/lib/filter/ast.ts";
import {
  durationUnits,
  type FilterFieldSpec,
  filterFieldList,
  filterFields,
  headerNamePattern,
  keyOf,
  maxNeedleLength,
  operatorsOf,
  sizeUnits,
  tagKeyPattern,
} from "~/lib/filter/fields.ts";
import { compileRegex, RegexSyntaxError } from "~/lib/filter/regex.ts";
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
  | { k: "lparen" | "rparen" | "lbracket" | "rbracket" | "and" | "or" | "not" | "end"; pos: number; text: string }
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

const wordOps: readonly FilterOp[] = ["startsWith", "endsWith", "contains", "icontains", "matches", "exists"];

/** The fields a mistyped name is most likely meant to be (at most three, closest first). */
function closestFields(name: string): string[] {
  const lower = name.toLowerCase();
  const scored = filterFieldList.map((f) => ({ name: f.name, d: editDistance(lower, f.name.toLowerCase()) }));
  return scored
    .filter((s) => s.d <= Math.max(2, Math.floor(s.name.length / 3)))
    .sort((a, b) => a.d - b.d)
    .slice(0, 3)
    .map((s) => s.name);
}

function editDistance(a: string, b: string): number {
  if (Math.abs(a.length - b.length) > 8) return 99;
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      row[j] = Math.min((prev[j] as number) + 1, (row[j - 1] as number) + 1, (prev[j - 1] as number) + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    prev = row;
  }
  return prev[b.length] as number;
}

/** `written`: the name as typed up to the next space or operator, e.g. `request.headers.x-request-id`. */
function unknownField(text: string, written: string): string {
  const base = ["request.headers", "response.headers", "tags"].find((name) => written.toLowerCase().startsWith(`${name}.`));
  if (base) {
    const what = base === "tags" ? "tag" : "header";
    return `write a ${what} as ${base}["${written.slice(base.length + 1).slice(0, 40)}"]`;
  }
  const near = closestFields(text);
  const hint = near.length > 0 ? `did you mean ${near.join(", ")}?` : "see the list of fields in the filter docs (/docs/filters)";
  return `unknown field "${text.slice(0, 40)}": ${hint}`;
}

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
    } else if (ch === "[" || ch === "]") {
      tokens.push({ k: ch === "[" ? "lbracket" : "rbracket", pos: i, text: ch });
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
    } else if (ch === "!") {
      tokens.push({ k: "not", pos: i, text: ch });
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
      // Dashes and colons too, so that a header name written without its brackets reads as one word.
      const m = /^[A-Za-z_][A-Za-z0-9_.:-]*/.exec(src.slice(i, i + 64))!;
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
    private readonly source: string,
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

  private nest(tok: Token): void {
    if (++this.depth > filterLimits.maxDepth) {
      throw new FilterSyntaxError(`parentheses nested deeper than ${filterLimits.maxDepth}`, tok.pos);
    }
  }

  private primary(): FilterExpr {
    const tok = this.tok;
    if (tok.k === "not") {
      this.nest(tok);
      this.i++;
      const expr = this.primary();
      this.depth--;
      return { kind: "not", expr };
    }
    if (tok.k === "lparen") {
      this.nest(tok);
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
    if (tok.k === "end") throw new FilterSyntaxError("expected a condition, e.g. response.status >= 500", tok.pos);
    throw new FilterSyntaxError(`expected a field (request.url, response.status, request.body, ...), found ${describe(tok)}`, tok.pos);
  }

  private clause(fieldTok: Token & { k: "ident" }): FilterExpr {
    if (++this.clauses > filterLimits.maxClauses) {
      throw new FilterSyntaxError(`more than ${filterLimits.maxClauses} conditions`, fieldTok.pos);
    }
    const spec = filterFields.get(fieldTok.text) ?? filterFieldList.find((f) => f.name.toLowerCase() === fieldTok.text.toLowerCase());
    if (!spec) {
      const written = /^[A-Za-z0-9_.:-]+/.exec(this.source.slice(fieldTok.pos, fieldTok.pos + 300))?.[0] ?? fieldTok.text;
      throw new FilterSyntaxError(unknownField(fieldTok.text, written), fieldTok.pos);
    }
    this.i++;
    const key = this.key(spec);
    const opTok = this.tok;
    const op = this.operator(spec, key !== undefined, opTok);
    this.i++;
    if (op === "exists") return { kind: "compare", field: spec.name, key, op, value: "", pos: fieldTok.pos };
    const valueTok = this.tok;
    const value = this.value(spec, op, valueTok);
    this.i++;
    return key === undefined
      ? { kind: "compare", field: spec.name, op, value, pos: fieldTok.pos }
      : { kind: "compare", field: spec.name, key, op, value, pos: fieldTok.pos };
  }

  /** A header's name or a tag's key in brackets, when the field takes one. */
  private key(spec: FilterFieldSpec): string | undefined {
    const rule = keyOf(spec);
    const what = spec.kind === "tag" ? "tag" : "header";
    const example = spec.kind === "tag" ? `${spec.name}["grpc_status"]` : `${spec.name}["x-request-id"]`;
    if (this.tok.k !== "lbracket") {
      if (rule === "required") throw new FilterSyntaxError(`name the ${what} in brackets, e.g. ${example}`, this.tok.pos);
      return undefined;
    }
    const open = this.tok;
    if (rule === "none") throw new FilterSyntaxError(`${spec.name} takes no name in brackets`, open.pos);
    const nameTok = this.tokens[++this.i]!;
    if (nameTok.k !== "string") {
      throw new FilterSyntaxError(`expected the ${what} name in quotes, e.g. ${example}, found ${describe(nameTok)}`, nameTok.pos);
    }
    const name = spec.kind === "tag" ? nameTok.value : nameTok.value.toLowerCase();
    if (!(spec.kind === "tag" ? tagKeyPattern : headerNamePattern).test(name)) {
      throw new FilterSyntaxError(`"${nameTok.value.slice(0, 40)}" is not a ${what} name`, nameTok.pos + 1);
    }
    const close = this.tokens[++this.i]!;
    if (close.k !== "rbracket") {
      throw new FilterSyntaxError(`expected "]" to close the "[" at ${open.pos}, found ${describe(close)}`, close.pos);
    }
    this.i++;
    return name;
  }

  private operator(spec: FilterFieldSpec, isKeyed: boolean, tok: Token): FilterOp {
    const ops = operatorsOf(spec, isKeyed);
    const candidate =
      tok.k === "cmp" ? tok.op : tok.k === "ident" ? wordOps.find((o) => o.toLowerCase() === tok.text.toLowerCase()) : undefined;
    if (candidate && ops.includes(candidate)) return candidate;
    const list = ops.join(", ");
    const name = isKeyed ? `${spec.name}[…]` : spec.name;
    if (candidate) {
      const hint = spec.kind === "headers" && !isKeyed ? ` (or name one header: ${spec.name}["name"] ${candidate} …)` : "";
      throw new FilterSyntaxError(`${name} cannot use "${candidate}": use ${list}${hint}`, tok.pos);
    }
    throw new FilterSyntaxError(`expected an operator after ${name} (${list}), found ${describe(tok)}`, tok.pos);
  }

  private quoted(tok: Token, example: string): string {
    if (tok.k !== "string") throw new FilterSyntaxError(`expected a quoted string, e.g. ${example}, found ${describe(tok)}`, tok.pos);
    return tok.value;
  }

  private value(spec: FilterFieldSpec, op: FilterOp, tok: Token): string | number | boolean {
    switch (spec.kind) {
      case "method": {
        if (tok.k !== "string") throw new FilterSyntaxError(`expected a quoted method, e.g. "GET", found ${describe(tok)}`, tok.pos);
        if (!/^[!#$%&'*+\-.^_`|~0-9A-Za-z]{1,32}$/.test(tok.value)) {
          throw new FilterSyntaxError(`"${tok.value.slice(0, 32)}" is not an HTTP method`, tok.pos);
        }
        // Methods are case-sensitive on the wire but always upper case in practice; "post" means POST.
        return tok.value.toUpperCase();
      }
      case "status":
      case "number": {
        const max = spec.kind === "status" ? 999 : Number.MAX_SAFE_INTEGER;
        if (tok.k !== "number" || tok.unit !== "" || !Number.isInteger(tok.value) || tok.value < 0 || tok.value > max) {
          const what = spec.kind === "status" ? "a status code (a whole number, e.g. 404)" : "a whole number";
          throw new FilterSyntaxError(`expected ${what}, found ${describe(tok)}`, tok.pos);
        }
        return tok.value;
      }
      case "size": {
        if (tok.k !== "number" || tok.value < 0) {
          throw new FilterSyntaxError(`expected a size, e.g. 512, 10KB or 1.5MiB, found ${describe(tok)}`, tok.pos);
        }
        const factor = sizeUnits[tok.unit === "" ? "b" : tok.unit.toLowerCase()];
        if (factor === undefined) {
          throw new FilterSyntaxError(
            `unknown size unit "${tok.unit}": use B, KB, KiB, MB, MiB, GB or GiB`,
            tok.pos + tok.text.length - tok.unit.length,
          );
        }
        const bytes = Math.round(tok.value * factor);
        if (!Number.isSafeInteger(bytes)) throw new FilterSyntaxError("size out of range", tok.pos);
        return bytes;
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
      case "enum": {
        const values = spec.values ?? [];
        const list = values.map((v) => `"${v}"`).join(" or ");
        if (tok.k !== "string") throw new FilterSyntaxError(`expected ${list}, found ${describe(tok)}`, tok.pos);
        const written = spec.isSpacedAsUnderscores ? tok.value.toLowerCase().replaceAll(" ", "_") : tok.value.toLowerCase();
        const found = values.find((v) => v === written);
        if (found === undefined) throw new FilterSyntaxError(`${spec.name} is ${list}, not "${tok.value.slice(0, 32)}"`, tok.pos);
        return found;
      }
      case "flag": {
        const word = tok.k === "ident" ? tok.text.toLowerCase() : "";
        if (word !== "true" && word !== "false") throw new FilterSyntaxError(`expected true or false, found ${describe(tok)}`, tok.pos);
        return word === "true";
      }
      case "text":
      case "body":
      case "headers":
      case "tag": {
        const example = spec.kind === "text" ? `"${spec.example.split('"')[1] ?? "/api/"}"` : '"zebra-7781"';
        const value = this.quoted(tok, example);
        const isContent = spec.kind !== "text";
        if (isContent && op !== "matches" && value.length > maxNeedleLength) {
          throw new FilterSyntaxError(
            `a ${spec.kind === "body" ? "body" : spec.kind === "tag" ? "tag" : "header"} search is at most ${maxNeedleLength} characters`,
            tok.pos,
          );
        }
        if (op === "matches") this.checkPattern(tok as Token & { k: "string" });
        return spec.isUpperCase && (op === "==" || op === "!=") ? value.toUpperCase() : value;
      }
    }
  }

  private checkPattern(tok: Token & { k: "string" }): void {
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
    parser = new Parser(source, tokenize(source), maxRegexStates);
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
  if (expr.kind === "compare") return 1;
  if (expr.kind === "not") return countClauses(expr.expr);
  return countClauses(expr.left) + countClauses(expr.right);
}
