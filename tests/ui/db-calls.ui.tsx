import { afterEach, describe, expect, test } from "bun:test";
import { cleanup, fireEvent, render, screen, within } from "@testing-library/react";
import { parseFilter } from "~/lib/filter/parse.ts";
import type { TracedEvent } from "~/lib/protocol/event.ts";
import { listColumns } from "~/lib/protocol/query.ts";
import { ResultsList } from "~/ui/explorer/results-list.tsx";
import { pickSuggestions } from "~/ui/filters/suggestions.ts";
import { EventList } from "~/ui/live/event-list.tsx";
import { callSteps } from "~/ui/request-detail/call-steps.ts";
import { RequestDetail } from "~/ui/request-detail/request-detail.tsx";
import { sqlTokens } from "~/ui/request-detail/sql-tokens.ts";
import { makeEvent } from "./live-event-factory.ts";

afterEach(cleanup);

/** A database call made `at` µs into `parent`, lasting `duration` µs. */
function dbCall(parent: TracedEvent, at: number, duration: number, fields: Partial<TracedEvent>): TracedEvent {
  return makeEvent({
    protocol: "db",
    parent_event_id: parent.event_id,
    time: parent.time + at,
    http_duration: duration,
    http_is_outgoing: true,
    http_req_path: "",
    http_req_headers: [],
    http_resp_body: "",
    http_server_addr: "127.0.0.1:5432",
    db_system: "postgresql",
    db_name: "shop",
    db_user: "app",
    ...fields,
  });
}

describe("an inbound request's calls", () => {
  const request = makeEvent({ http_req_path: "/orders/1", http_duration: 100_000 });
  const cacheGet = dbCall(request, 1_000, 2_000, { db_system: "redis", db_operation: "GET", db_statement: "GET order:1" });
  const slowQuery = dbCall(request, 5_000, 60_000, {
    db_operation: "SELECT",
    db_statement: "SELECT pg_sleep(0.06)",
    db_rows: 1,
  });
  const payment = makeEvent({
    parent_event_id: request.event_id,
    time: request.time + 70_000,
    http_duration: 20_000,
    http_is_outgoing: true,
    http_req_method: "POST",
    http_req_host: "pay.example.test",
    http_req_path: "/charge",
  });

  test("in time order, HTTP and database together; the slowest step is the culprit; the rest is the program's own time", () => {
    const { calls, own } = callSteps(request, [payment, slowQuery, cacheGet]);
    expect(calls.map((s) => s.event!.event_id)).toEqual([cacheGet.event_id, slowQuery.event_id, payment.event_id]);
    expect(calls.map((s) => [s.start, s.duration])).toEqual([
      [1_000, 2_000],
      [5_000, 60_000],
      [70_000, 20_000],
    ]);
    expect(own.duration).toBe(100_000 - 82_000);
    expect(calls.filter((s) => s.isCulprit).map((s) => s.event!.event_id)).toEqual([slowQuery.event_id]);
    expect(own.isCulprit).toBe(false);
  });

  test("calls in parallel count once; when the program's own time is the longest, it is the culprit", () => {
    const a = dbCall(request, 10_000, 5_000, { db_operation: "GET", db_system: "redis" });
    const b = dbCall(request, 12_000, 5_000, { db_operation: "GET", db_system: "redis" });
    const { calls, own } = callSteps(request, [a, b]);
    expect(own.duration).toBe(100_000 - 7_000);
    expect(own.isCulprit).toBe(true);
    expect(calls.some((s) => s.isCulprit)).toBe(false);
  });

  test("the detail draws them as one waterfall with the culprit flagged, and opens a call on click", () => {
    const opened: string[] = [];
    render(<RequestDetail event={request} outboundCalls={[payment, slowQuery, cacheGet]} onOpen={(e) => opened.push(e.event_id)} />);
    const list = screen.getByRole("list", { name: "Outbound calls" });
    const rows = within(list).getAllByRole("listitem");
    expect(rows.map((r) => r.textContent)).toEqual([
      expect.stringMatching(/^RedisOKGET order:1/),
      expect.stringMatching(/^PGOKculpritSELECT pg_sleep\(0\.06\)/),
      expect.stringMatching(/^POST200.*pay\.example\.test\/charge/),
      expect.stringMatching(/^own time/),
    ]);
    expect(list.querySelectorAll("[data-culprit]").length).toBe(1);
    expect(rows[1]!.hasAttribute("data-culprit")).toBe(true);
    fireEvent.click(within(rows[1]!).getByRole("button"));
    expect(opened).toEqual([slowQuery.event_id]);
  });
});

describe("a database call's own detail", () => {
  const request = makeEvent({ http_req_path: "/login" });

  test("statement highlighted as text, parameters, rows, the error, and its parent", () => {
    const call = dbCall(request, 100, 900, {
      db_operation: "SELECT",
      db_statement: "SELECT id FROM users WHERE name = $1 AND note = '<b>x</b>'",
      db_statement_normalized: "SELECT id FROM users WHERE name = $1 AND note = ?",
      db_parameters: [["$1", "ada"]],
      db_error_code: "42P01",
      db_error_message: 'relation "users" does not exist',
      tags: { prepared: "user-by-name" },
    });
    const { container } = render(<RequestDetail event={call} parent={request} onSaveHar={() => {}} />);
    // HAR holds HTTP exchanges: a statement is not offered as one.
    expect(screen.queryByRole("button", { name: "Save as HAR" })).toBeNull();
    expect(screen.getByTestId("detail-url").textContent).toBe(call.db_statement);
    const statement = screen.getByTestId("statement");
    expect(statement.textContent).toBe(call.db_statement);
    // Captured text is shown as text: the markup in the literal is not an element.
    expect(statement.querySelector("b")).toBeNull();
    expect(within(statement).getByText("SELECT").className).toContain("text-violet-300");
    expect(within(statement).getByText("$1").className).toContain("text-sky-300");
    const params = screen.getByRole("table", { name: "Parameters" });
    expect(params.textContent).toBe("$1ada");
    expect(screen.getByRole("alert").textContent).toBe('42P01relation "users" does not exist');
    expect(screen.getByRole("table", { name: "Call" }).textContent).toContain("prepared statementuser-by-name");
    expect(screen.getByText("Made while serving")).not.toBeNull();
    expect(container.textContent).toContain("/login");
  });

  test("a call whose parent could not be told apart says it is a guess", () => {
    const call = dbCall(request, 100, 900, {
      db_operation: "SELECT",
      db_statement: "SELECT 1",
      tags: { parent_guess: "the newest of 2 requests in flight in this process" },
    });
    render(<RequestDetail event={call} parent={request} />);
    expect(screen.getByText("A guess: the newest of 2 requests in flight in this process.")).not.toBeNull();
  });
});

describe("the live list", () => {
  test("a database call shows its system where the method is, OK or its error code where the status is, its statement as the URL", () => {
    const request = makeEvent({ http_req_path: "/orders/1" });
    const ok = dbCall(request, 10, 10, { db_system: "redis", db_operation: "GET", db_statement: "GET order:1" });
    const failed = dbCall(request, 20, 10, { db_operation: "SELECT", db_statement: "SELECT * FROM missing", db_error_code: "42P01" });
    render(<EventList events={[request, ok, failed]} version={1} selectedId={null} onSelect={() => {}} />);
    const rows = screen.getAllByRole("row").filter((r) => r.hasAttribute("data-event-id"));
    const cells = (row: HTMLElement) =>
      within(row)
        .getAllByRole("cell")
        .map((c) => c.textContent);
    expect(cells(rows[0]!).slice(1, 4)).toEqual(["42P01", "PG", "↗SELECT * FROM missing"]);
    expect(cells(rows[1]!).slice(1, 4)).toEqual(["OK", "Redis", "↗GET order:1"]);
    expect(within(rows[0]!).getAllByRole("cell")[1]!.className).toContain("text-red-400");
    expect(within(rows[0]!).getAllByRole("cell")[4]!.textContent).toBe(`${failed.bytes_received} B`);
  });
});

describe("the requests explorer", () => {
  test("a database call's row: its system, OK or the error code, its statement", () => {
    const request = makeEvent({ http_req_path: "/orders/1" });
    const failed = dbCall(request, 20, 10, {
      db_operation: "SELECT",
      db_statement: "SELECT * FROM missing",
      db_error_code: "1146",
      db_system: "mysql",
    });
    const ok = dbCall(request, 10, 10, { db_system: "redis", db_operation: "GET", db_statement: "GET order:1" });
    render(
      <ResultsList
        rows={[failed, ok, request]}
        tz="UTC"
        sort={{ key: "time", dir: "desc" }}
        onSort={() => {}}
        selectedId={null}
        onSelect={() => {}}
      />,
    );
    const rows = screen.getAllByRole("row").filter((r) => r.hasAttribute("data-event-id"));
    const cells = (row: HTMLElement) =>
      within(row)
        .getAllByRole("cell")
        .map((c) => c.textContent);
    expect(rows.map((row) => cells(row).slice(1, 4))).toEqual([
      ["MySQL", "1146", "SELECT * FROM missing"],
      ["Redis", "OK", "GET order:1"],
      ["GET", "200", "/orders/1"],
    ]);
    // The explorer asks the store for these columns only: what the row shows must be among them.
    expect(listColumns).toEqual(expect.arrayContaining(["protocol", "db_system", "db_statement", "db_error_code"]));
  });
});

describe("filters", () => {
  test("typing db offers HTTP only (no database calls) and the failed calls, both valid filters", () => {
    const texts = pickSuggestions([], "db").map((s) => s.text);
    expect(texts).toEqual(['db.system == ""', 'db.error != ""']);
    for (const text of texts) expect(parseFilter(text).ok).toBe(true);
  });
});

describe("statement highlighting", () => {
  test("joins back to the statement exactly; a Redis command's first word is the keyword", () => {
    const sql = "SELECT a, 'it''s' FROM t -- note\nWHERE x = ? AND y = 1.5 /* c */";
    expect(
      sqlTokens(sql)
        .map((t) => t.text)
        .join(""),
    ).toBe(sql);
    expect(sqlTokens("SET session:1 select", true).filter((t) => t.kind === "keyword")).toEqual([{ kind: "keyword", text: "SET" }]);
  });
});
