import { DuckDBInstance } from "@duckdb/node-api";
import { openDuckDbStore } from "~/store/duckdb.ts";
import { duckdbLiteral } from "~/store/sql/escape.ts";
import { runConformance } from "./conformance.ts";

const raw = await (await DuckDBInstance.create(":memory:")).connect();

runConformance({
  name: "DuckDB",
  open: () => openDuckDbStore({ path: ":memory:" }),
  literalHex: async (bytes) => {
    const r = await raw.runAndReadAll(`SELECT hex(${duckdbLiteral(bytes)}) AS h`);
    return String(r.getRowObjectsJS()[0]!.h);
  },
});
