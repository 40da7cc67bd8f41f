import { describe, expect, test } from "bun:test";
import { normalizeSql, type SqlDialect, secretSqlValues, splitSqlStatements, sqlOperation, tokenizeSql } from "~/lib/sql.ts";

const secret = (name: string) => /pass|token|secret/i.test(name);

function secrets(text: string, dialect: SqlDialect = "postgresql") {
  const tokens = tokenizeSql(text, dialect);
  const found = secretSqlValues(text, tokens, secret);
  return { literals: [...found.literals].map((i) => text.slice(tokens[i]!.start, tokens[i]!.end)), params: [...found.params] };
}

describe("SQL text", () => {
  test("tokens cover the text exactly, whatever it holds", () => {
    const texts = [
      "SELECT 'it''s', E'a\\'b', $$x;y$$, $tag$ ; $tag$, \"Weird \"\"name\", 1.5e3, 0xff FROM t -- c;\n/* a /* nested */ ; */ WHERE a ?| b",
      "SELECT `a`, \"s;\\\"\", # comment ; \n 'x\\'' FROM t",
      "unterminated 'string",
      "",
    ];
    for (const [i, text] of texts.entries()) {
      const tokens = tokenizeSql(text, i === 1 ? "mysql" : "postgresql");
      expect(tokens.map((t) => text.slice(t.start, t.end)).join("")).toBe(text);
      for (let k = 1; k < tokens.length; k++) expect(tokens[k]!.start).toBe(tokens[k - 1]!.end);
    }
  });

  test("a simple query splits into the statements the server runs, semicolons in strings, names and comments kept", () => {
    expect(splitSqlStatements("BEGIN; INSERT INTO t VALUES ('a;b'); -- x;\n SELECT $$;$$ ;; COMMIT;", "postgresql")).toEqual([
      "BEGIN",
      "INSERT INTO t VALUES ('a;b')",
      "SELECT $$;$$",
      "COMMIT",
    ]);
    expect(splitSqlStatements("SELECT 1;", "postgresql")).toEqual(["SELECT 1"]);
    expect(splitSqlStatements(" ; -- only a comment", "postgresql")).toEqual([]);
    expect(splitSqlStatements("SELECT 'a\\';b'; SELECT 2", "mysql")).toEqual(["SELECT 'a\\';b'", "SELECT 2"]);
  });

  test("the operation is the statement's verb, a WITH's main statement's", () => {
    expect(sqlOperation("select * from t", "postgresql")).toBe("SELECT");
    expect(sqlOperation("  /* hint */ Insert into t values (1)", "postgresql")).toBe("INSERT");
    expect(sqlOperation("WITH a AS (SELECT 1), b AS (DELETE FROM x RETURNING *) UPDATE t SET c = 1", "postgresql")).toBe("UPDATE");
    expect(sqlOperation("(SELECT 1) UNION (SELECT 2)", "postgresql")).toBe("SELECT");
    expect(sqlOperation("", "postgresql")).toBe("");
  });

  test("normalising replaces literals and collapses value lists, so the same query reads the same", () => {
    const one = normalizeSql("SELECT * FROM users WHERE id = 42 AND name = 'bob' -- by id", "postgresql");
    const two = normalizeSql("SELECT  *  FROM users\n WHERE id = 7 AND name = 'alice'", "postgresql");
    expect(one).toBe("SELECT * FROM users WHERE id = ? AND name = ?");
    expect(two).toBe(one);
    expect(normalizeSql("SELECT * FROM t WHERE id IN (1, 2, 3, 4)", "postgresql")).toBe("SELECT * FROM t WHERE id IN (?)");
    expect(normalizeSql("INSERT INTO t (a, b) VALUES (1, 'x'), (2, 'y'), (3, 'z')", "mysql")).toBe("INSERT INTO t (a, b) VALUES (?)");
    expect(normalizeSql("SELECT * FROM t WHERE a = $1 AND b = $2", "postgresql")).toBe("SELECT * FROM t WHERE a = $1 AND b = $2");
    expect(normalizeSql('SELECT "Col" FROM t WHERE x=-1.5e2', "postgresql")).toBe('SELECT "Col" FROM t WHERE x=-?');
  });

  test("values bound to secret-looking columns are found: comparisons, IN lists, SET, INSERT columns", () => {
    expect(secrets("SELECT id FROM users WHERE email = $1 AND password_hash = $2")).toEqual({ literals: [], params: ["$2"] });
    expect(secrets("UPDATE users SET \"password\" = 'hunter2', name = 'bob' WHERE id = 1")).toEqual({
      literals: ["'hunter2'"],
      params: [],
    });
    expect(secrets("SELECT * FROM s WHERE s.token IN ('a', 'b') AND x = 'c'")).toEqual({ literals: ["'a'", "'b'"], params: [] });
    expect(secrets("INSERT INTO users (email, password, age) VALUES (?, ?, ?), ('e', 'p', 3)", "mysql")).toEqual({
      literals: ["'p'"],
      params: ["?2"],
    });
    expect(secrets("INSERT INTO api_keys (`secret`) VALUES ('s1')", "mysql")).toEqual({ literals: ["'s1'"], params: [] });
    expect(secrets("SELECT * FROM t WHERE name = 'password'")).toEqual({ literals: [], params: [] });
  });
});
