import { describe, expect, test } from "bun:test";
import { compileFilter, compileFilterChips, filterMeter } from "~/lib/filter/evaluate.ts";
import { parseFilter } from "~/lib/filter/parse.ts";
import { neutralEvent, type TracedEvent } from "~/lib/protocol/event.ts";

/** The database call fields of the filter language: db.system, db.statement, db.operation, db.error, db.error_message. */
function ok(src: string) {
  const r = parseFilter(src);
  if (!r.ok) throw new Error(`expected ${src} to parse: ${r.error.message} at ${r.error.position}`);
  return r.expr;
}

function err(src: string) {
  const r = parseFilter(src);
  if (r.ok) throw new Error(`expected ${src} to fail`);
  return r.error;
}

const call = (fields: Partial<TracedEvent>): TracedEvent => ({ ...neutralEvent(), protocol: "db", ...fields });
const http = (path: string): TracedEvent => ({ ...neutralEvent(), protocol: "http", http_req_method: "GET", http_req_path: path });

const select = call({
  db_system: "postgresql",
  db_statement: "SELECT id, total FROM orders WHERE customer_id = $1",
  db_operation: "SELECT",
  http_duration: 80_000,
});
const failed = call({
  db_system: "postgresql",
  db_statement: "INSERT INTO users (email) VALUES ($1)",
  db_operation: "INSERT",
  db_error_code: "23505",
  db_error_message: 'duplicate key value violates unique constraint "users_email_key"',
});
const get = call({ db_system: "redis", db_statement: "GET session:42", db_operation: "GET" });
const page = http("/orders");
const all = [select, failed, get, page];

function matching(src: string): TracedEvent[] {
  const predicate = compileFilter(ok(src));
  return all.filter(predicate);
}

describe("database call fields in the filter language", () => {
  test("each name parses with the operators it allows, values normalised as the events hold them", () => {
    expect(ok('db.system == "PostgreSQL"')).toEqual({ kind: "compare", field: "db.system", op: "==", value: "postgresql", pos: 0 });
    expect(ok('db.operation != "select"')).toMatchObject({ field: "db.operation", op: "!=", value: "SELECT" });
    for (const op of ["contains", "matches", "startsWith", "==", "!="]) {
      expect(ok(`db.statement ${op} "FROM orders"`)).toMatchObject({ field: "db.statement", op, value: "FROM orders" });
    }
    for (const op of ["==", "!=", "startsWith", "contains"]) expect(ok(`db.error ${op} "23"`)).toMatchObject({ field: "db.error", op });
    expect(ok('db.error_message contains "duplicate"')).toMatchObject({ field: "db.error_message", op: "contains" });
  });

  test("bad values and operators are refused with a message that says what would do", () => {
    expect(err('db.system == "oracle"').message).toBe('db.system is "postgresql" or "mysql" or "redis" or "", not "oracle"');
    expect(err("db.system == 5").message).toMatch(/expected "postgresql" or "mysql" or "redis" or ""/);
    expect(err('db.system contains "sql"').message).toMatch(/db.system cannot use "contains": use ==, !=/);
    expect(err("db.operation > 3").message).toMatch(/db.operation cannot use ">"/);
    expect(err("db.error == 23505").message).toMatch(/expected a quoted string, e.g. "23505"/);
    expect(err('db.statement matches "(a"').message).toMatch(/\(|paren/i);
    expect(err("db.rows > 3").message).toMatch(/unknown field "db.rows"/);
  });

  test("the live evaluator picks the calls each filter names, and never an HTTP exchange for a db field", () => {
    expect(matching('db.system == "postgresql"')).toEqual([select, failed]);
    expect(matching('db.system == ""')).toEqual([page]);
    expect(matching('db.system != ""')).toEqual([select, failed, get]);
    expect(matching('db.statement contains "FROM orders"')).toEqual([select]);
    expect(matching('db.statement matches "^(GET|SET) session:[0-9]+$"')).toEqual([get]);
    expect(matching('db.statement startsWith "INSERT"')).toEqual([failed]);
    expect(matching('db.operation == "get" || db.operation == "INSERT"')).toEqual([failed, get]);
    expect(matching('db.error != ""')).toEqual([failed]);
    expect(matching('db.error startsWith "23"')).toEqual([failed]);
    expect(matching('db.error_message contains "duplicate key"')).toEqual([failed]);
    expect(matching('db.system == "postgresql" && duration > 50ms')).toEqual([select]);
  });

  test("a statement match is metered like a URL match: a long statement cannot run away with a viewer's budget", () => {
    const long = call({ db_system: "mysql", db_statement: `SELECT ${"a, ".repeat(50_000)}b FROM t`, db_operation: "SELECT" });
    const meter = filterMeter();
    const compiled = compileFilterChips(['db.statement contains "zzz"'], meter);
    if (!compiled.ok) throw new Error(compiled.error.message);
    meter.left = 10;
    expect(compiled.predicate(long)).toBe(false);
    expect(meter.ranOutAt).toEqual({ index: 0, position: 0 });
  });
});
