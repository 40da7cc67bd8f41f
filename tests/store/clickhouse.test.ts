import { openClickHouseStore } from "~/store/clickhouse.ts";
import { clickhouseLiteral } from "~/store/sql/escape.ts";
import { clickhouseUrl } from "../support/clickhouse.ts";
import { runConformance } from "./conformance.ts";

runConformance({
  name: "ClickHouse",
  open: async () => openClickHouseStore({ url: await clickhouseUrl() }),
  literalHex: async (bytes) => {
    const res = await fetch(await clickhouseUrl(), {
      method: "POST",
      body: `SELECT hex(${clickhouseLiteral(bytes)})`,
    });
    return (await res.text()).trim();
  },
});
