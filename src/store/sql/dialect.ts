import type { QuantileMethod } from "~/lib/protocol/query.ts";
import { clickhouseLiteral, duckdbLiteral } from "./escape.ts";

/** What differs between the engines' SQL. Column names passed in are whitelisted identifiers. */
export type Dialect = {
  name: "duckdb" | "clickhouse";
  literal(value: string | number): string;
  startsWith(column: string, literal: string): string;
  endsWith(column: string, literal: string): string;
  /** `needle` not yet a literal. */
  contains(column: string, needle: string): string;
  /** RE2 in both engines: linear time, no catastrophic backtracking. */
  matches(column: string, literal: string): string;
  intDiv(a: string, b: string): string;
  countIf(condition: string): string;
  /** Case-insensitive `contains` (Unicode simple case folding), `needle` not yet a literal. */
  icontains(column: string, needle: string): string;
  /** A tag's value from the tags column (JSON text of a flat object of strings); "" when the event has none. */
  tag(key: string): string;
  /** Whether the event has the tag. */
  hasTag(key: string): string;
  /**
   * Whether some header named `name` (lower case, checked) in a headers' search form (`\nname: value` lines) passes
   * `condition`, which gets the value's expression.
   */
  anyHeader(form: string, name: string, condition: (value: string) => string): string;
  /** An aggregate: the array of the column's quantiles at `levels` (fractions), 1-indexed. */
  quantiles(column: string, levels: readonly number[]): string;
  /** Whether `quantiles` is exact or the engine's sketch. */
  quantileMethod: QuantileMethod;
  /**
   * As `quantiles`, for the many small groups of the pictures (the sparklines, the histogram's latency lines), where a
   * bounded sample is worth its speed.
   */
  sampledQuantiles(column: string, levels: readonly number[]): string;
  /** Appended to a filtered count (the histogram's slice counts, countAll): its settings, "" where it needs none. */
  countSettings: string;
};

const levelList = (levels: readonly number[]) => levels.map((l) => String(Number(l))).join(", ");

/** Tag keys and header names reach SQL only as checked here (lib/filter/fields.ts says what they may be). */
function plainKey(key: string): string {
  if (!/^[A-Za-z0-9_.-]{1,64}$/.test(key)) throw new Error(`tag key ${key} is not a plain name`);
  return key;
}

/**
 * A pattern matching `text` literally in RE2: punctuation escaped with a backslash, control characters as \x{..}.
 * Not \x escapes for punctuation: ClickHouse 18.16 reads a pattern's literal part to prefilter rows, and takes `\x2d`
 * for the three characters it is written with.
 */
export function re2Literal(text: string): string {
  let out = "";
  for (const ch of text) {
    const code = ch.charCodeAt(0);
    if (code < 0x20 || code === 0x7f) out += `\\x{${code.toString(16)}}`;
    else if (code < 0x80 && !/[A-Za-z0-9_ ]/.test(ch)) out += `\\${ch}`;
    else out += ch;
  }
  return out;
}

/**
 * In the tags' JSON text (JSON.stringify of a flat object of strings) a key starts right after "{" or ",": inside a
 * string every quote is escaped, so `,"key":"…"` can only be that key and its value.
 */
function tagPattern(key: string): string {
  return `[{,]"${re2Literal(plainKey(key))}":"(?:[^"\\\\]|\\\\.)*"`;
}

/** The values of the headers named `name` in a headers' form: the first group of each match. */
function headerPattern(name: string): string {
  if (!/^[!#$%&'*+\-.^_`|~0-9a-z:]{1,264}$/.test(name)) throw new Error("not a header name");
  return `\\n${re2Literal(name)}: ([^\\n]*)`;
}

export const duckdbDialect: Dialect = {
  name: "duckdb",
  literal: duckdbLiteral,
  startsWith: (c, l) => `starts_with(${c}, ${l})`,
  endsWith: (c, l) => `ends_with(${c}, ${l})`,
  contains: (c, needle) => `contains(${c}, ${duckdbLiteral(needle)})`,
  matches: (c, l) => `regexp_matches(${c}, ${l})`,
  intDiv: (a, b) => `(${a}) // (${b})`,
  countIf: (cond) => `count(*) FILTER (WHERE ${cond})`,
  icontains: (c, needle) => `regexp_matches(${c}, ${duckdbLiteral(re2Literal(needle))}, 'i')`,
  tag: (key) => `coalesce(json_extract_string(tags, ${duckdbLiteral(`$."${plainKey(key)}"`)}), '')`,
  hasTag: (key) => `json_extract_string(tags, ${duckdbLiteral(`$."${plainKey(key)}"`)}) IS NOT NULL`,
  anyHeader: (form, name, condition) =>
    `len(list_filter(regexp_extract_all(${form}, ${duckdbLiteral(headerPattern(name))}, 1), x -> ${condition("x")})) > 0`,
  // Exact, and cheaper here than DuckDB's t-digest (approx_quantile) over the same rows (bench/README.md, endpoints).
  quantiles: (c, levels) => `quantile_disc(${c}, [${levelList(levels)}])`,
  quantileMethod: "exact",
  // A reservoir of 8,192 values a group: exact below that, a uniform sample above; several times cheaper than
  // quantile_disc over thousands of small groups (bench/README.md, endpoints).
  sampledQuantiles: (c, levels) => `reservoir_quantile(${c}, [${levelList(levels)}])`,
  countSettings: "",
};

export const clickhouseDialect: Dialect = {
  name: "clickhouse",
  literal: clickhouseLiteral,
  startsWith: (c, l) => `startsWith(${c}, ${l})`,
  endsWith: (c, l) => `endsWith(${c}, ${l})`,
  // LIKE rather than position(): the skip indexes of newer servers (clickhouse.ts) prune granules for LIKE, not position.
  contains: (c, needle) => `like(${c}, ${clickhouseLiteral(`%${needle.replace(/[\\%_]/g, "\\$&")}%`)})`,
  matches: (c, l) => `match(${c}, ${l})`,
  intDiv: (a, b) => `intDiv(${a}, ${b})`,
  countIf: (cond) => `countIf(${cond})`,
  // 18.16 has no JSONExtract: the key's own `"key":"value"` is cut out first, so a value or another key that
  // merely contains the text cannot answer for it, then visitParamExtractString unescapes the value.
  tag: (key) => `visitParamExtractString(extract(tags, ${clickhouseLiteral(tagPattern(key))}), ${clickhouseLiteral(key)})`,
  // 18.16's match() drops (?i) when it searches the pattern's literal part first: its case-insensitive search instead.
  icontains: (c, needle) => `(positionCaseInsensitiveUTF8(${c}, ${clickhouseLiteral(needle)}) > 0)`,
  hasTag: (key) => `match(tags, ${clickhouseLiteral(tagPattern(key))})`,
  anyHeader: (form, name, condition) =>
    `arrayExists(x -> ${condition("x")}, extractAll(${form}, ${clickhouseLiteral(headerPattern(name))}))`,
  // A t-digest per group (18.16 has it): a few KiB whatever the rows, with an error bench/README.md states.
  quantiles: (c, levels) => `quantilesTDigest(${levelList(levels)})(${c})`,
  quantileMethod: "approximate",
  sampledQuantiles: (c, levels) => `quantilesTDigest(${levelList(levels)})(${c})`,
  countSettings: "",
};

/**
 * ClickHouse without data skipping indexes (before 20.1, Debian's 18.16), whose searches scan. Its filtered counts run
 * with the content condition in WHERE: left to itself 18.16 moves it to PREWHERE, where a substring search over large
 * text costs several times what it costs in WHERE (bench/README.md, search at scale), and a count reads nothing else
 * that PREWHERE could spare.
 */
export const clickhouseScanDialect: Dialect = {
  ...clickhouseDialect,
  countSettings: " SETTINGS optimize_move_to_prewhere = 0",
};
