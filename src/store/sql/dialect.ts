import type { QuantileMethod } from "~/lib/protocol/query.ts";
import { clickhouseLiteral, duckdbLiteral } from "./escape.ts";

/** What differs between the engines' SQL. Column names passed in are whitelisted identifiers. */
export type Dialect = {
  name: "duckdb" | "clickhouse";
  literal(value: string | number): string;
  startsWith(column: string, literal: string): string;
  endsWith(column: string, literal: string): string;
  contains(column: string, literal: string): string;
  /** RE2 in both engines: linear time, no catastrophic backtracking. */
  matches(column: string, literal: string): string;
  intDiv(a: string, b: string): string;
  countIf(condition: string): string;
  /** A tag's value from the tags column (JSON text of a flat object of strings); "" when the event has none. */
  tag(key: string): string;
  /** An aggregate: the array of the column's quantiles at `levels` (fractions), 1-indexed. */
  quantiles(column: string, levels: readonly number[]): string;
  /** Whether `quantiles` is exact or the engine's sketch. */
  quantileMethod: QuantileMethod;
  /**
   * As `quantiles`, for the many small groups of the pictures (the sparklines, the histogram's latency lines), where a
   * bounded sample is worth its speed.
   */
  sampledQuantiles(column: string, levels: readonly number[]): string;
};

const levelList = (levels: readonly number[]) => levels.map((l) => String(Number(l))).join(", ");

/** Only a few fixed keys are read (the TLS tags), never one from a client. */
function plainKey(key: string): string {
  if (!/^[a-z_]+$/.test(key)) throw new Error(`tag key ${key} is not a plain name`);
  return key;
}

/**
 * In the tags' JSON text (JSON.stringify of a flat object of strings) a key starts right after "{" or ",": inside a
 * string every quote is escaped, so `,"key":"…"` can only be that key and its value.
 */
function tagPattern(key: string): string {
  return `[{,]"${plainKey(key)}":"(?:[^"\\\\]|\\\\.)*"`;
}

export const duckdbDialect: Dialect = {
  name: "duckdb",
  literal: duckdbLiteral,
  startsWith: (c, l) => `starts_with(${c}, ${l})`,
  endsWith: (c, l) => `ends_with(${c}, ${l})`,
  contains: (c, l) => `contains(${c}, ${l})`,
  matches: (c, l) => `regexp_matches(${c}, ${l})`,
  intDiv: (a, b) => `(${a}) // (${b})`,
  countIf: (cond) => `count(*) FILTER (WHERE ${cond})`,
  tag: (key) => `coalesce(json_extract_string(tags, ${duckdbLiteral(`$."${plainKey(key)}"`)}), '')`,
  // Exact, and cheaper here than DuckDB's t-digest (approx_quantile) over the same rows (bench/README.md, endpoints).
  quantiles: (c, levels) => `quantile_disc(${c}, [${levelList(levels)}])`,
  quantileMethod: "exact",
  // A reservoir of 8,192 values a group: exact below that, a uniform sample above; several times cheaper than
  // quantile_disc over thousands of small groups (bench/README.md, endpoints).
  sampledQuantiles: (c, levels) => `reservoir_quantile(${c}, [${levelList(levels)}])`,
};

export const clickhouseDialect: Dialect = {
  name: "clickhouse",
  literal: clickhouseLiteral,
  startsWith: (c, l) => `startsWith(${c}, ${l})`,
  endsWith: (c, l) => `endsWith(${c}, ${l})`,
  contains: (c, l) => `(position(${c}, ${l}) > 0)`,
  matches: (c, l) => `match(${c}, ${l})`,
  intDiv: (a, b) => `intDiv(${a}, ${b})`,
  countIf: (cond) => `countIf(${cond})`,
  // 18.16 has no JSONExtract: the key's own `"key":"value"` is cut out first, so a value or another key that
  // merely contains the text cannot answer for it, then visitParamExtractString unescapes the value.
  tag: (key) => `visitParamExtractString(extract(tags, ${clickhouseLiteral(tagPattern(key))}), ${clickhouseLiteral(key)})`,
  // A t-digest per group (18.16 has it): a few KiB whatever the rows, with an error bench/README.md states.
  quantiles: (c, levels) => `quantilesTDigest(${levelList(levels)})(${c})`,
  quantileMethod: "approximate",
  sampledQuantiles: (c, levels) => `quantilesTDigest(${levelList(levels)})(${c})`,
};
