import { templatePath } from "~/lib/routes/template.ts";
import { clickhouseLiteral as lit } from "~/store/sql/escape.ts";
import { methods, routes as paths, services, statuses } from "../../tests/store/generate.ts";

/**
 * `INSERT ... SELECT ... FROM numbers(n)`: `n` events made inside ClickHouse with the distributions of
 * tests/store/generate.ts (services, methods, routes and their templates, statuses, log-normal durations, sizes, a tenth
 * outgoing calls to one host, of which some are plain TCP and some database calls), spread evenly over
 * [startMicros, endMicros). Loading 10M through the store's insert takes longer than a benchmark run may; a
 * materialized view on the table fills as it does on ingest.
 */

/** A weighted choice as an array with each value repeated its weight's times, indexed by a hash of the row number. */
function weighted(values: ReadonlyArray<readonly [string | number, number]>, salt: number): string {
  const list: string[] = [];
  for (const [v, w] of values) for (let i = 0; i < w; i++) list.push(typeof v === "number" ? String(v) : lit(v));
  return `arrayElement([${list.join(", ")}], 1 + cityHash64(number, ${salt}) % ${list.length})`;
}

/** A uniform number in (0, 1] from a hash of the row number. */
const uniform = (salt: number) => `((cityHash64(number, ${salt}) % 1000000 + 1) / 1000000)`;

export function generateInsideSql(table: string, n: number, startMicros: number, endMicros: number): string {
  const span = endMicros - startMicros;
  const pathsOnly = paths.map(([p]) => p);
  const pathIndex = weighted(
    paths.map(([, w], i) => [i + 1, w]),
    3,
  );
  // 18.16's replaceOne takes a constant replacement only: each path is its text before and after its one placeholder.
  const parts = pathsOnly.map((p) => {
    const m = /^(.*?)\{(id|n)\}(.*)$/.exec(p);
    return m ? { prefix: m[1] ?? "", kind: m[2] ?? "", suffix: m[3] ?? "" } : { prefix: p, kind: "", suffix: "" };
  });
  const templates = pathsOnly.map((p) => lit(templatePath(p.replace("{id}", "12345").replace("{n}", "3"))));
  const isChild = "(cityHash64(number, 9) % 10 = 0)";
  const protocol = `multiIf(${isChild} AND number % 5 IN (2, 3), 'tcp', ${isChild} AND number % 5 = 4, 'db', 'http')`;
  const duration = `greatest(50, toInt64(round(exp(log(20000) + 1.6 * sqrt(-2 * log(${uniform(5)})) * cos(2 * pi() * ${uniform(6)})))))`;
  const columns = [
    "time",
    "event_id",
    "service",
    "protocol",
    "http_is_outgoing",
    "http_req_host",
    "http_req_method",
    "http_req_path",
    "http_route",
    "http_resp_status_code",
    "http_duration",
    "http_req_body_size_bytes_wire",
    "http_resp_body_size_bytes_wire",
  ];
  const inner =
    `SELECT number, ${startMicros} + intDiv(number * ${span}, ${n}) AS t, ${protocol} AS p, ${isChild} AS child, ` +
    `${pathIndex} AS ri, ${weighted(methods, 2)} AS m FROM numbers(${n})`;
  const values = [
    "t",
    "toString(generateUUIDv4())",
    weighted(services, 1),
    "p",
    "child",
    "if(child, 'api.stripe.com', 'shop.example.com')",
    "if(p = 'http', m, '')",
    `if(p = 'http', concat(arrayElement([${parts.map((x) => lit(x.prefix)).join(", ")}], ri), multiIf(arrayElement([${parts.map((x) => lit(x.kind)).join(", ")}], ri) = 'id', toString(cityHash64(number, 7) % 100000), arrayElement([${parts.map((x) => lit(x.kind)).join(", ")}], ri) = 'n', toString(1 + cityHash64(number, 8) % 20), ''), arrayElement([${parts.map((x) => lit(x.suffix)).join(", ")}], ri)), '')`,
    `if(p = 'http', arrayElement([${templates.join(", ")}], ri), '')`,
    // Every 23rd inbound request got no answer (status 0).
    `if(p != 'http' OR (NOT child AND number % 23 = 7), 0, ${weighted(statuses, 4)})`,
    duration,
    `if(p != 'http' OR m = 'GET', 0, cityHash64(number, 10) % 512)`,
    "if(p != 'http', 0, cityHash64(number, 11) % 512)",
  ];
  return `INSERT INTO ${table} (${columns.join(", ")}) SELECT ${values.join(", ")} FROM (${inner})`;
}
