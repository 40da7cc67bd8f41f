import { beforeAll, describe, expect, test } from "bun:test";
import { clickhouseDialect, clickhouseScanDialect } from "~/store/sql/dialect.ts";
import { clickhouseLiteral } from "~/store/sql/escape.ts";
import { clickhouseUrl } from "../../support/clickhouse.ts";

/**
 * ClickHouse's two spellings of `contains`: LIKE where skip indexes prune for it, position() where a server has none.
 * Both are evaluated by the real server on the same texts and needles and must agree on every one.
 */
describe("ClickHouse contains: position() answers as LIKE does", () => {
  let url: string;
  beforeAll(async () => {
    url = await clickhouseUrl();
  }, 60_000);

  const texts = [
    '{"order":"zebra-7781","note":"café"}',
    "100% of a_b and a\\b, it's",
    "\nx-request-id: rid-5521\ncontent-type: application/json\n",
    "",
    "Zürich ZÜRICH",
  ];
  const needles = [
    "zebra-7781",
    "zebra_7781",
    "%",
    "_",
    "a_b",
    "a%b",
    "\\",
    "a\\b",
    "it's",
    "\nx-request-id: rid-5521\n",
    "",
    "Zürich",
    "zürich",
    "é",
  ];

  test("every needle over every text", async () => {
    const column = "t";
    const cells = needles.flatMap((needle) => [clickhouseDialect.contains(column, needle), clickhouseScanDialect.contains(column, needle)]);
    expect(clickhouseScanDialect.contains(column, "x")).toContain("position(");
    const query = `SELECT ${cells.join(", ")} FROM (SELECT arrayJoin([${texts.map(clickhouseLiteral).join(", ")}]) AS t) FORMAT TabSeparated`;
    const res = await fetch(url, { method: "POST", body: query });
    const body = await res.text();
    expect(res.ok).toBe(true);
    const rows = body
      .trim()
      .split("\n")
      .map((line) => line.split("\t"));
    expect(rows.length).toBe(texts.length);
    let found = 0;
    rows.forEach((row, t) => {
      needles.forEach((needle, n) => {
        const [like, position] = [row[2 * n], row[2 * n + 1]];
        expect({ text: texts[t], needle, position }).toEqual({ text: texts[t], needle, position: like });
        expect(like).toBe(texts[t]!.includes(needle) ? "1" : "0");
        if (like === "1") found++;
      });
    });
    expect(found).toBeGreaterThan(10);
  });
});
