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
};

export const duckdbDialect: Dialect = {
  name: "duckdb",
  literal: duckdbLiteral,
  startsWith: (c, l) => `starts_with(${c}, ${l})`,
  endsWith: (c, l) => `ends_with(${c}, ${l})`,
  contains: (c, l) => `contains(${c}, ${l})`,
  matches: (c, l) => `regexp_matches(${c}, ${l})`,
  intDiv: (a, b) => `(${a}) // (${b})`,
  countIf: (cond) => `count(*) FILTER (WHERE ${cond})`,
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
};
