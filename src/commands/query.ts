import { isUtf8 } from "node:buffer";
import { TunnelClient, TunnelConnectError, TunnelQueryError } from "~/agent/query-client.ts";
import { dbOutcome, dbSystemShort } from "~/lib/db-call.ts";
import { errorMessage } from "~/lib/errors.ts";
import { displayUrl } from "~/lib/event-url.ts";
import { type FilterExpr, wsOpcodes } from "~/lib/filter/ast.ts";
import { parseFilter } from "~/lib/filter/parse.ts";
import { formatBytes, formatDuration } from "~/lib/format.ts";
import { harEntryIds, harPageSize, harPages, harRowColumns, harSizeColumns, harStream, storedBodyBytes } from "~/lib/har.ts";
import { eventFields, type TracedEvent } from "~/lib/protocol/event.ts";
import { maxRowLimit, type RowColumn } from "~/lib/protocol/query.ts";
import { parseAgentConfig } from "~/lib/server/env.ts";
import { parseFlags } from "~/lib/server/flags.ts";
import { buildInfo } from "~/lib/server/version.ts";
import { filterProblem, timeWindow, windowFlags } from "./time-window.ts";

const usage = `usage: tapscope query [--since 1h|15m|2d | --from ISO [--to ISO]] [--filter EXPR] [--limit N] [--format table|json|har]
  TAPSCOPE_TOKEN (a namespace token) and TAPSCOPE_ENDPOINT (the server) come from the environment.
  --filter uses the filter language: response.status >= 500 && request.url contains "/api/", response.body icontains "E1042"
  --format json prints every field of each request (bodies as text, or base64 with *_encoding saying so)`;

const queryFlags = {
  ...windowFlags,
  limit: { type: "string" },
  format: { type: "string" },
  help: { type: "boolean", short: "h" },
} as const;

/** ISO 8601 with the microseconds the event carries. */
export function isoMicros(micros: number): string {
  const ms = Math.floor(micros / 1000);
  const frac = String(Math.floor(micros - Math.floor(micros / 1_000_000) * 1_000_000)).padStart(6, "0");
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, `.${frac}Z`);
}

const isSearchField = (name: string) => name.startsWith("search_");

/** Whether a filter reads a body (its answer then depends on how much of each body was kept). */
function searchesBodies(filterText: string): boolean {
  const parsed = filterText.trim() ? parseFilter(filterText) : null;
  if (!parsed?.ok) return false;
  const reads = (e: FilterExpr): boolean =>
    e.kind === "compare"
      ? e.field === "request.body" || e.field === "response.body"
      : e.kind === "not"
        ? reads(e.expr)
        : reads(e.left) || reads(e.right);
  return reads(parsed.expr);
}

/** Control characters a text body does not hold (tab, line breaks and form feed aside). */
// biome-ignore lint/suspicious/noControlCharactersInRegex: telling text from binary is the point
const controlCharacters = /[\x00-\x08\x0b\x0e-\x1f\x7f]/;

/** A stored body (base64) as text when it is UTF-8 text, else as it is, and which of the two it is. */
export function bodyJson(base64: string): { text: string; encoding: "text" | "base64" } {
  if (!base64) return { text: "", encoding: "text" };
  const bytes = Buffer.from(base64, "base64");
  if (isUtf8(bytes)) {
    const text = bytes.toString("utf8");
    if (!controlCharacters.test(text)) return { text, encoding: "text" };
  }
  return { text: base64, encoding: "base64" };
}

/**
 * One event as `--format json` prints it: every field in the field table's order (the server's search columns aside),
 * the time in ISO 8601 with microseconds, each body as its text when it is text and base64 otherwise, with
 * `<body>_encoding` saying which (its `_truncated` flag beside it).
 */
export function eventJson(event: TracedEvent): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const f of eventFields.rows) {
    if (isSearchField(f.name)) continue;
    const value = (event as Record<string, unknown>)[f.name];
    if (f.type === "time") out[f.name] = isoMicros(Number(value));
    else if (f.type === "body") {
      const body = bodyJson(typeof value === "string" ? value : "");
      out[f.name] = body.text;
      out[`${f.name}_encoding`] = body.encoding;
    } else out[f.name] = value;
  }
  return out;
}

/** The URL column of a row as the server sent it (the rows crossed a socket: each field checked for its type). */
function rowUrl(r: Record<string, unknown>): string {
  const text = (v: unknown) => (typeof v === "string" ? v : "");
  if (r.protocol === "ws") {
    // Known words only: the row's text came from a traced peer.
    const opcode = wsOpcodes.find((o) => o === r.ws_opcode) ?? "message";
    const from = r.ws_direction === "client" ? " from the client" : r.ws_direction === "server" ? " from the server" : "";
    const size = Number(r.ws_size);
    return `WebSocket ${opcode}${from}${size >= 0 ? `, ${formatBytes(size)}` : ""}`;
  }
  const tags = typeof r.tags === "object" && r.tags !== null && !Array.isArray(r.tags) ? (r.tags as Record<string, string>) : {};
  return displayUrl({
    protocol: r.protocol === "tcp" || r.protocol === "db" ? r.protocol : "http",
    db_statement: text(r.db_statement),
    http_is_outgoing: r.http_is_outgoing === true,
    http_req_host: text(r.http_req_host),
    http_req_path: text(r.http_req_path),
    tls_server_name: text(r.tls_server_name),
    http_server_addr: text(r.http_server_addr),
    tags,
  });
}

export function formatTable(rows: Record<string, unknown>[]): string {
  const cells = rows.map((r) => [
    new Date(Number(r.time) / 1000).toISOString().replace("T", " ").replace("Z", ""),
    // A database call: OK or its error code where the status is, its system where the method is.
    r.protocol === "db"
      ? dbOutcome({ db_error_code: String(r.db_error_code ?? ""), db_error_message: String(r.db_error_message ?? "") })
      : Number(r.http_resp_status_code)
        ? String(r.http_resp_status_code)
        : "-",
    r.protocol === "db" ? dbSystemShort(String(r.db_system ?? "")) : String(r.http_req_method || (r.protocol === "ws" ? "WS" : "-")),
    rowUrl(r),
    formatDuration(Number(r.http_duration)),
  ]);
  const header = ["TIME", "STATUS", "METHOD", "URL", "DURATION"];
  const all = [header, ...cells];
  const widths = header.map((_, i) => Math.max(...all.map((row) => row[i]!.length)));
  return all.map((row) => row.map((c, i) => (i === row.length - 1 ? c : c.padEnd(widths[i]!))).join("  ")).join("\n") + "\n";
}

function fail(message: string, code = 2): number {
  process.stderr.write(`tapscope query: ${message}\n`);
  return code;
}

export async function main(args: string[]): Promise<number> {
  const agent = parseAgentConfig();
  const parsed = parseFlags(args, queryFlags);
  if (!parsed.ok) return fail(`${parsed.error}\n${usage}`);
  const { flags } = parsed;
  if (flags.help) {
    process.stdout.write(`${usage}\n`);
    return 0;
  }
  const filterText = flags.filter ?? "";
  const limit = Number(flags.limit ?? 1000);
  if (!Number.isInteger(limit) || limit < 1 || limit > maxRowLimit) return fail(`--limit must be 1 to ${maxRowLimit}`);
  const format = flags.format ?? "table";
  if (format !== "table" && format !== "json" && format !== "har") return fail(`--format must be table, json or har, got "${format}"`);
  if (!agent.token) return fail("TAPSCOPE_TOKEN is not set: create a namespace token under Tokens in the dashboard and export it");
  const window = timeWindow(flags, Date.now());
  if ("error" in window) return fail(window.error);
  const { lowerMs, upperMs } = window;
  const filterError = filterProblem(filterText);
  if (filterError) return fail(filterError);

  let client: TunnelClient;
  try {
    client = await TunnelClient.open({
      endpoint: agent.endpoint,
      token: agent.token,
      role: "SELECT",
    });
  } catch (err) {
    if (err instanceof TunnelConnectError && err.status === 401) return fail("the server refused TAPSCOPE_TOKEN (revoked or mistyped?)", 1);
    if (err instanceof TunnelConnectError && err.status === undefined) {
      return fail(`cannot reach the server at ${agent.endpoint} (is TAPSCOPE_ENDPOINT right?): ${err.message}`, 1);
    }
    return fail(errorMessage(err), 1);
  }
  try {
    const filter = { clauses: [], global: { lowerMs, upperMs } };
    const cutFlags = ["http_req_body_truncated", "http_resp_body_truncated"] as const;
    const columns: RowColumn[] =
      format === "har"
        ? ["time", "event_id", ...harRowColumns]
        : format === "json"
          ? ["time", "event_id", ...harSizeColumns, ...cutFlags]
          : [
              ...cutFlags,
              "time",
              "event_id",
              "http_req_method",
              "http_req_path",
              "http_resp_status_code",
              "http_duration",
              ...(["protocol", "http_is_outgoing", "http_req_host", "tls_server_name", "http_server_addr", "tags"] as const),
              ...(["db_system", "db_statement", "db_error_code", "db_error_message"] as const),
              ...(["ws_direction", "ws_opcode", "ws_size"] as const),
            ];
    const rows = await client.query(
      {
        kind: "rows",
        query: { filter, limit, columns },
        filterText: filterText.trim() || undefined,
      },
      { compression: "gzip" },
    );
    if (searchesBodies(filterText)) {
      const cut = rows.data.filter((r) => cutFlags.some((c) => r[c] === true)).length;
      if (cut > 0) {
        process.stderr.write(
          `tapscope query: bodies cut at capture were searched as far as they were kept (${cut} of the ${rows.data.length} shown had one)\n`,
        );
      }
    }
    if (rows.wasRowLimitExceeded) {
      process.stderr.write(
        `tapscope query: showing the newest ${rows.data.length} of ${rows.actualNumberOfRows} matching requests (--limit, --since or --filter narrow it)\n`,
      );
    }
    if (format === "json") {
      // Newest first, a page of full events at a time, each printed as it comes.
      const ids = rows.data.map((r) => String(r.event_id));
      const pages = harPages(
        ids,
        async (page) =>
          (await client.query({ kind: "events", eventIds: page, range: filter.global }, { compression: "gzip" }))
            .data as unknown as TracedEvent[],
        { sizeOf: (i) => storedBodyBytes(rows.data[i] ?? {}) },
      );
      for await (const page of pages) await write(page.map((e) => `${JSON.stringify(eventJson(e))}\n`).join(""));
    } else if (format === "table") {
      if (rows.data.length === 0) {
        process.stderr.write("tapscope query: no requests matched (widen --since or loosen --filter)\n");
        return 0;
      }
      await write(formatTable(rows.data));
    } else {
      // Oldest first, a page of full events at a time, written as it comes: a large result never sits in memory.
      // A WebSocket's messages go on its handshake's entry: the handshake is fetched with them, on a page of its own.
      const { ids, rows: entryRows, handshakes } = harEntryIds(rows.data.toReversed());
      const isLong = ids.length > harPageSize * 4;
      let fetched = 0;
      const pages = harPages(
        ids,
        async (page) => {
          const [first = ""] = page;
          const batch = handshakes.has(first)
            ? await client.query({ kind: "event", eventId: first }, { compression: "gzip" })
            : await client.query({ kind: "events", eventIds: page, range: filter.global }, { compression: "gzip" });
          fetched += page.length;
          if (isLong) process.stderr.write(`\rtapscope query: fetched ${fetched}/${ids.length} requests`);
          return [...(batch.data as unknown as TracedEvent[]), ...(batch.children ?? [])];
        },
        { sizeOf: (i) => storedBodyBytes(entryRows[i] ?? {}), isAlone: (i) => handshakes.has(ids[i] ?? "") },
      );
      const reader = harStream(pages, { version: buildInfo.version }).getReader();
      for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) await Bun.write(Bun.stdout, chunk.value);
      if (isLong) process.stderr.write("\n");
    }
    return 0;
  } catch (err) {
    if (err instanceof TunnelQueryError) return fail(err.message, 1);
    if (err instanceof TunnelConnectError) return fail(`lost the connection to ${agent.endpoint}: ${err.message}`, 1);
    throw err;
  } finally {
    client.close();
  }
}

async function write(text: string): Promise<void> {
  await Bun.write(Bun.stdout, text);
}
