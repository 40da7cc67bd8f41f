/**
 * SQL text as a person reads it, without a grammar: one tokenizer (strings, quoted names, comments, numbers,
 * placeholders) shared by the agent, which splits a simple query into its statements, names each statement's operation,
 * replaces its literals for the normalised form and finds the values bound to secret-looking columns, and by the
 * dashboard, which highlights statements. Dialects differ where it matters here: PostgreSQL's dollar quotes and
 * E'' strings, MySQL's backslash escapes, "..." strings, backticks and # comments.
 */
export type SqlDialect = "postgresql" | "mysql";

export type SqlTokenKind =
  | "space"
  | "comment"
  /** A string literal (with its quotes and prefix). */
  | "string"
  | "number"
  /** A keyword or an unquoted name. */
  | "word"
  /** A quoted name: "name" (PostgreSQL) or `name` (MySQL). */
  | "name"
  /** A bound parameter: $1 (PostgreSQL) or ? (MySQL and most drivers). */
  | "param"
  /** Operators and punctuation, one token per run of operator characters; ( ) , ; . each on their own. */
  | "op";

export type SqlToken = { kind: SqlTokenKind; start: number; end: number };

const isDigit = (c: number) => c >= 48 && c <= 57;
const isWordStart = (c: number) => (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 95 || c >= 128;
const isWordPart = (c: number) => isWordStart(c) || isDigit(c) || c === 36;
const OPERATOR_CHARS = "+-*/<>=~!@#%^&|`?:";
const isOperatorChar = (c: number) => c < 128 && OPERATOR_CHARS.includes(String.fromCharCode(c));

/** Every token of `text`, in order, covering it entirely. Never throws; an unterminated string or comment runs to the end. */
export function tokenizeSql(text: string, dialect: SqlDialect): SqlToken[] {
  const tokens: SqlToken[] = [];
  const n = text.length;
  const isMysql = dialect === "mysql";
  let i = 0;
  const push = (kind: SqlTokenKind, start: number, end: number) => tokens.push({ kind, start, end });
  while (i < n) {
    const start = i;
    const c = text.charCodeAt(i);
    const next = i + 1 < n ? text.charCodeAt(i + 1) : -1;
    if (c === 32 || c === 9 || c === 10 || c === 13 || c === 12) {
      while (i < n && /[\s]/.test(text[i]!)) i++;
      push("space", start, i);
    } else if ((c === 45 && next === 45) || (c === 35 && isMysql)) {
      const eol = text.indexOf("\n", i);
      i = eol === -1 ? n : eol;
      push("comment", start, i);
    } else if (c === 47 && next === 42) {
      // Block comments nest in PostgreSQL.
      let depth = 0;
      while (i < n) {
        if (text.charCodeAt(i) === 47 && text.charCodeAt(i + 1) === 42) {
          depth++;
          i += 2;
        } else if (text.charCodeAt(i) === 42 && text.charCodeAt(i + 1) === 47) {
          i += 2;
          if (--depth === 0 || isMysql) break;
        } else i++;
      }
      push("comment", start, Math.min(i, n));
    } else if (c === 39 || (c === 34 && isMysql)) {
      i = quotedEnd(text, i, c, isMysql);
      push("string", start, i);
    } else if ((c === 69 || c === 101) && next === 39 && !isMysql) {
      i = quotedEnd(text, i + 1, 39, true);
      push("string", start, i);
    } else if ((c === 66 || c === 98 || c === 88 || c === 120 || c === 78 || c === 110 || c === 85 || c === 117) && next === 39) {
      // B'0101', X'ff', N'text', U&'...' style prefixes.
      i = quotedEnd(text, i + 1, 39, isMysql);
      push("string", start, i);
    } else if (c === 34 || (c === 96 && isMysql)) {
      i = quotedEnd(text, i, c, false);
      push("name", start, i);
    } else if (c === 36 && !isMysql && (next === 36 || isWordStart(next))) {
      // A dollar-quoted string ($$...$$, $tag$...$tag$), or a word that happens to start with $.
      const tagEnd = text.indexOf("$", i + 1);
      const tag = tagEnd === -1 ? "" : text.slice(i, tagEnd + 1);
      if (tag && /^\$[A-Za-z_\u0080-\uffff]?[A-Za-z0-9_\u0080-\uffff]*\$$/.test(tag)) {
        const close = text.indexOf(tag, tagEnd + 1);
        i = close === -1 ? n : close + tag.length;
        push("string", start, i);
      } else {
        i++;
        while (i < n && isWordPart(text.charCodeAt(i))) i++;
        push("word", start, i);
      }
    } else if (c === 36 && isDigit(next)) {
      i++;
      while (i < n && isDigit(text.charCodeAt(i))) i++;
      push("param", start, i);
    } else if (c === 63 && !(next === 124 || next === 38 || next === 45 || next === 35)) {
      // ? alone is a placeholder; ?| ?& ?- ?# are PostgreSQL operators.
      i++;
      push("param", start, i);
    } else if (isDigit(c) || (c === 46 && isDigit(next))) {
      if (c === 48 && (next === 120 || next === 88)) {
        i += 2;
        while (i < n && /[0-9a-fA-F]/.test(text[i]!)) i++;
      } else {
        while (i < n && (isDigit(text.charCodeAt(i)) || text.charCodeAt(i) === 46 || text.charCodeAt(i) === 95)) i++;
        if (i < n && (text.charCodeAt(i) === 101 || text.charCodeAt(i) === 69)) {
          const sign = text.charCodeAt(i + 1);
          if (isDigit(sign) || ((sign === 43 || sign === 45) && isDigit(text.charCodeAt(i + 2)))) {
            i += 2;
            while (i < n && isDigit(text.charCodeAt(i))) i++;
          }
        }
      }
      push("number", start, i);
    } else if (isWordStart(c)) {
      while (i < n && isWordPart(text.charCodeAt(i))) i++;
      push("word", start, i);
    } else if (c === 40 || c === 41 || c === 44 || c === 59 || c === 46 || c === 91 || c === 93) {
      i++;
      push("op", start, i);
    } else if (isOperatorChar(c)) {
      while (i < n && isOperatorChar(text.charCodeAt(i)) && !(text.charCodeAt(i) === 45 && text.charCodeAt(i + 1) === 45)) i++;
      push("op", start, i);
    } else {
      i++;
      push("op", start, i);
    }
  }
  return tokens;
}

/** The index after a quoted run that starts at `at` with `quote`; a doubled quote stays inside, and so does \x when `backslash`. */
function quotedEnd(text: string, at: number, quote: number, backslash: boolean): number {
  let i = at + 1;
  while (i < text.length) {
    const c = text.charCodeAt(i);
    if (backslash && c === 92) i += 2;
    else if (c === quote) {
      if (text.charCodeAt(i + 1) === quote) i += 2;
      else return i + 1;
    } else i++;
  }
  return text.length;
}

const isText = (t: SqlToken) => t.kind !== "space" && t.kind !== "comment";

/**
 * The statements of a simple query, as the server runs them (split at the semicolons outside strings, names and
 * comments; empty ones left out: the server answers none of them), trimmed.
 */
export function splitSqlStatements(text: string, dialect: SqlDialect): string[] {
  const tokens = tokenizeSql(text, dialect);
  const out: string[] = [];
  let from = -1;
  let to = -1;
  for (const t of tokens) {
    if (t.kind === "op" && text.charCodeAt(t.start) === 59) {
      if (from >= 0) out.push(text.slice(from, to));
      from = -1;
    } else if (isText(t)) {
      if (from < 0) from = t.start;
      to = t.end;
    }
  }
  if (from >= 0) out.push(text.slice(from, to));
  return out;
}

const mainVerbs = new Set(["SELECT", "INSERT", "UPDATE", "DELETE", "MERGE", "VALUES", "TABLE"]);

/** SELECT, INSERT, CREATE...: the statement's first word, upper case; a WITH's main statement; "" when none. */
export function sqlOperation(text: string, dialect: SqlDialect, tokens = tokenizeSql(text, dialect)): string {
  let first = "";
  let depth = 0;
  for (const t of tokens) {
    if (t.kind === "op") {
      const c = text.charCodeAt(t.start);
      if (c === 40) depth++;
      else if (c === 41) depth--;
      continue;
    }
    if (t.kind !== "word") continue;
    const word = text.slice(t.start, t.end).toUpperCase();
    if (!first) {
      first = word;
      if (first !== "WITH") return first.slice(0, 64);
      continue;
    }
    if (depth === 0 && mainVerbs.has(word)) return word;
  }
  return first.slice(0, 64);
}

/**
 * The statement with its literals replaced by `?` (numbers, strings), comments dropped and runs of space made one, and
 * a list of values (`IN (1, 2, 3)`, a multi-row VALUES) collapsed to its first: so the same query with other values
 * reads the same. Placeholders stay as written.
 */
export function normalizeSql(text: string, dialect: SqlDialect, tokens = tokenizeSql(text, dialect)): string {
  // The solid parts, each with whether space came before it.
  const parts: string[] = [];
  const spaced: boolean[] = [];
  let isSpace = false;
  let skipDepth = 0;
  for (const t of tokens) {
    if (!isText(t)) {
      isSpace = true;
      continue;
    }
    const value = t.kind === "string" || t.kind === "number" ? "?" : text.slice(t.start, t.end);
    if (skipDepth > 0) {
      if (value === "(") skipDepth++;
      else if (value === ")") skipDepth--;
      isSpace = false;
      continue;
    }
    const prev = parts[parts.length - 1];
    if (value === "?" && prev === "," && parts[parts.length - 2] === "?") {
      // "?, ?, ?": the list reads as its first value.
      parts.pop();
      spaced.pop();
      isSpace = false;
      continue;
    }
    if (value === "(" && prev === "," && parts[parts.length - 2] === ")" && isValueRow(parts, parts.length - 2)) {
      // "(?, ?), (?, ?)": the rows read as the first.
      parts.pop();
      spaced.pop();
      skipDepth = 1;
      isSpace = false;
      continue;
    }
    parts.push(value);
    spaced.push(isSpace && parts.length > 1);
    isSpace = false;
  }
  let out = "";
  for (let i = 0; i < parts.length; i++) out += spaced[i] ? ` ${parts[i]}` : parts[i];
  return out;
}

/** Whether the parenthesised group that closes at parts[close] holds only values and placeholders. */
function isValueRow(parts: string[], close: number): boolean {
  for (let i = close - 1; i >= 0; i--) {
    const p = parts[i]!;
    if (p === "(") return i < close - 1;
    if (p !== "?" && p !== "," && !/^\$\d+$/.test(p)) return false;
  }
  return false;
}

export type SecretValues = {
  /** Indexes into the tokens of literals bound to a secret-looking column. */
  literals: Set<number>;
  /** Placeholders bound to one: "$2" (PostgreSQL) or "?3" (MySQL's third `?`). */
  params: Set<string>;
};

const comparisons = new Set(["=", "!=", "<>", "LIKE", "ILIKE", "IN"]);

/**
 * The values a statement binds to columns whose name `isSecret` says holds a secret: `password = $1`, `"token" IN
 * ('a', 'b')`, `UPDATE users SET password_hash = '...'`, `INSERT INTO users (email, password) VALUES ($1, $2)`.
 */
export function secretSqlValues(text: string, tokens: SqlToken[], isSecret: (name: string) => boolean): SecretValues {
  const found: SecretValues = { literals: new Set(), params: new Set() };
  const solid: number[] = [];
  for (let i = 0; i < tokens.length; i++) if (isText(tokens[i]!)) solid.push(i);
  const word = (k: number) => {
    const t = tokens[solid[k]!];
    return t ? text.slice(t.start, t.end) : "";
  };
  const nameOf = (k: number): string => {
    const t = tokens[solid[k]!];
    if (!t) return "";
    if (t.kind === "word") return text.slice(t.start, t.end);
    if (t.kind === "name") return text.slice(t.start + 1, t.end - 1);
    return "";
  };
  let questionMarks = 0;
  const paramNames = new Map<number, string>();
  for (let k = 0; k < solid.length; k++) {
    const t = tokens[solid[k]!]!;
    if (t.kind === "param") paramNames.set(k, text.charCodeAt(t.start) === 63 ? `?${++questionMarks}` : text.slice(t.start, t.end));
  }
  const mark = (k: number) => {
    const t = tokens[solid[k]!];
    if (!t) return;
    if (t.kind === "string" || t.kind === "number") found.literals.add(solid[k]!);
    else if (t.kind === "param") found.params.add(paramNames.get(k)!);
  };
  // Bound through a comparison or an assignment: name op value, name IN (values).
  for (let k = 0; k + 2 < solid.length; k++) {
    const name = nameOf(k);
    if (!name) continue;
    const op = word(k + 1).toUpperCase();
    if (!comparisons.has(op)) continue;
    if (!isSecret(name)) continue;
    if (op === "IN" && word(k + 2) === "(") {
      for (let j = k + 3; j < solid.length && word(j) !== ")"; j++) mark(j);
    } else mark(k + 2);
  }
  // INSERT INTO t (a, b) VALUES (x, y), (z, w): by position.
  for (let k = 0; k < solid.length; k++) {
    if (word(k).toUpperCase() !== "INTO") continue;
    let j = k + 1;
    while (j < solid.length && word(j) !== "(" && word(j).toUpperCase() !== "VALUES") j++;
    if (word(j) !== "(") continue;
    const columns: string[] = [];
    for (j++; j < solid.length && word(j) !== ")"; j++) if (word(j) !== "," && word(j) !== ".") columns.push(nameOf(j));
    if (!columns.some(isSecret)) continue;
    j++;
    if (word(j).toUpperCase() !== "VALUES") continue;
    j++;
    while (word(j) === "(") {
      let column = 0;
      let depth = 0;
      for (j++; j < solid.length; j++) {
        const w = word(j);
        if (w === "(") depth++;
        else if (w === ")" && depth-- === 0) break;
        else if (w === "," && depth === 0) column++;
        else if (depth === 0 && isSecret(columns[column] ?? "")) mark(j);
      }
      j++;
      if (word(j) !== ",") break;
      j++;
    }
  }
  return found;
}

const keywords = new Set(
  (
    "select from where and or not in is null as on join left right inner outer full cross group by order having limit offset " +
    "insert into values update set delete returning with union all distinct case when then else end create table index view " +
    "drop alter add column primary key foreign references unique default begin commit rollback savepoint release transaction " +
    "exists between like ilike asc desc true false cast conflict do nothing lateral using over partition window explain analyze " +
    "grant revoke truncate copy to show use database schema if replace merge matched for share lock nowait skip locked"
  ).split(" "),
);

/** Whether a word token is an SQL keyword the dashboard highlights. */
export function isSqlKeyword(word: string): boolean {
  return keywords.has(word.toLowerCase());
}
