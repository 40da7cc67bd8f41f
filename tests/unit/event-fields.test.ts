import { describe, expect, test } from "bun:test";
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { compileFilter } from "~/lib/filter/evaluate.ts";
import { parseFilter } from "~/lib/filter/parse.ts";
import { eventFields, eventFieldTable, neutralEvent, type TracedEvent } from "~/lib/protocol/event.ts";
import { encodeEventBatch, eventBatchEncoder } from "~/lib/protocol/event-batch.ts";
import { deriveEventFields, type FieldSpec, neutralEventOf } from "~/lib/protocol/event-fields.ts";
import { estimateJsonLength, jsonLengthEstimator } from "~/lib/protocol/event-size.ts";
import { TRUNCATION_MARKER } from "~/lib/protocol/publish.ts";
import { eventValidator, validateEvent } from "~/lib/protocol/validate-event.ts";
import { eventBatchValidator, validateEventBatch } from "~/lib/protocol/validate-event-batch.ts";
import { createTableStatements } from "~/store/clickhouse.ts";
import { openDuckDbStore } from "~/store/duckdb.ts";
import { compileWhere } from "~/store/sql/compile.ts";
import { duckdbDialect } from "~/store/sql/dialect.ts";
import { eventLayout, missingColumns, rowToEvent, storeLayout } from "~/store/table.ts";
import { type RoutedEvent, routed, routedEvent } from "../store/added-field.ts";
import { tracedEvent } from "../support/event-factory.ts";

/**
 * The event field table (src/lib/protocol/event.ts) is the one place a field is declared. These tests add a field to a
 * copy of it, the way the next one will be added (one row), and see every consumer follow; they also hold the rules a
 * row must keep.
 */

describe("a field added to a copy of the table", () => {
  test("is in the event type and starts neutral", () => {
    const event: RoutedEvent = neutralEventOf<RoutedEvent>(routed)();
    expect(event.http_route).toBe("");
    expect(Object.keys(event)).toEqual(routed.names as string[]);
  });

  test("is checked by the JSON validator: kept, cut to its limit, refused when not text, neutral when absent", () => {
    const validate = eventValidator(routed);
    const kept = validate(routedEvent("/users/:id"));
    expect(kept.ok && (kept.event as unknown as RoutedEvent).http_route).toBe("/users/:id");

    const long = validate(routedEvent(`/${"r".repeat(400)}`));
    if (!long.ok) throw new Error(long.error);
    const cut = (long.event as unknown as RoutedEvent).http_route;
    expect([cut.length, cut.endsWith(TRUNCATION_MARKER), long.truncated]).toEqual([256, true, 1]);

    expect(validate({ ...routedEvent(""), http_route: 42 })).toEqual({ ok: false, error: "http_route must be a string" });
    const { http_route: _, ...older } = routedEvent("");
    const fromOlder = validate(older);
    expect(fromOlder.ok && (fromOlder.event as unknown as RoutedEvent).http_route).toBe("");
    // The server of the real table ignores it, as it ignores any field it does not know.
    const today = validateEvent(routedEvent("/users/:id"));
    expect(today.ok && "http_route" in today.event).toBe(false);
  });

  test("travels in binary batches: its own column, read back as sent, and agents and servers of either table still understand each other", () => {
    const events = [routedEvent("/users/:id"), routedEvent("/orders"), routedEvent(`/${"r".repeat(400)}`)];
    const frame = eventBatchEncoder(routed)(7, events);
    const read = eventBatchValidator(routed)(frame);
    if ("error" in read) throw new Error(read.message);
    const routes = read.events.map((e) => (e as unknown as RoutedEvent).http_route);
    expect(routes.slice(0, 2)).toEqual(["/users/:id", "/orders"]);
    expect(routes[2]!.length).toBe(256);
    expect([read.refused, read.truncated]).toEqual([0, 1]);
    // The same events as the JSON path makes them.
    const json = events.map((e) => eventValidator(routed)(JSON.parse(JSON.stringify(e))));
    expect(read.events).toEqual(json.map((r) => (r.ok ? r.event : null)) as TracedEvent[]);

    // A server of today's table reads the newer agent's frame and skips the column it does not know.
    const today = validateEventBatch(frame);
    if ("error" in today) throw new Error(today.message);
    expect(today.events.map((e) => e.event_id)).toEqual(events.map((e) => e.event_id));
    expect(today.events.some((e) => "http_route" in e)).toBe(false);
    // A server of the new table reads an older agent's frame: the field is neutral.
    const older = eventBatchValidator(routed)(encodeEventBatch(8, [tracedEvent()]));
    if ("error" in older) throw new Error(older.message);
    expect((older.events[0] as unknown as RoutedEvent).http_route).toBe("");
    // A column the table knows, sent with another kind, is a broken frame.
    const wrongKind = eventBatchValidator(routed)(
      eventBatchEncoder(deriveEventFields([...eventFieldTable, { name: "http_route", type: "int", min: 0, max: 9 }]))(9, [tracedEvent()]),
    );
    expect(wrongKind).toMatchObject({ error: "malformed", message: "event batch: column http_route must be of kind str" });
  });

  test("is a clause column, a row column and an exported column; today's table refuses a clause on it", () => {
    expect(routed.stringClauseColumns).toContain("http_route");
    expect(routed.rowColumns.at(-1)).toBe("http_route");
    expect(routed.exportColumns).toEqual([...eventFields.exportColumns, "http_route"]);
    const query = {
      filter: {
        clauses: [{ type: "String", column: "http_route", op: "Equals", value: "/users/:id" }],
        global: { lowerMs: 0, upperMs: 1 },
      },
    } as const;
    const range = { lowerMs: 0, upperMs: 1 };
    expect(compileWhere(duckdbDialect, query as never, range, routed)).toContain("http_route = '/users/:id'");
    expect(() => compileWhere(duckdbDialect, query as never, range)).toThrow("unknown string column");
  });

  test("is counted by the live history's size estimate", () => {
    const estimate = jsonLengthEstimator(routed);
    const short = routedEvent("/a");
    expect(estimate(routedEvent(`/${"r".repeat(200)}`) as unknown as TracedEvent) - estimate(short as unknown as TracedEvent)).toBe(199);
  });

  test("is a stored column of both engines, single node and cluster", () => {
    const layout = storeLayout(routed);
    expect(layout.columns.at(-1)).toMatchObject({ name: "http_route", type: "string", fill: "" });
    const [single] = createTableStatements("events_x", undefined, layout);
    expect(single).toContain(", http_route String DEFAULT '')");
    const cluster = createTableStatements("events_x", { name: "c", replicated: false }, layout);
    expect(cluster.map((sql) => sql.includes("http_route String DEFAULT ''"))).toEqual([true, true]);
    expect(createTableStatements("events_x", undefined)[0]).not.toContain("http_route");
  });

  test("is stored, queried, exported in rows and read back by a store opened with the table (DuckDB)", async () => {
    const store = await openDuckDbStore({ path: ":memory:", fields: routed });
    const ns = randomUUID();
    const time = 1_760_000_000_000_000;
    const events = [routedEvent("/users/:id", { time }), routedEvent("/orders", { time: time + 1 })];
    await store.insert(ns, events as unknown as TracedEvent[]);
    const global = { lowerMs: time / 1000 - 1, upperMs: time / 1000 + 1 };
    const rows = await store.queryRows(ns, {
      filter: { clauses: [{ type: "String", column: "http_route" as never, op: "Equals", value: "/users/:id" }], global },
    });
    expect(rows.meta.at(-1)).toBe("http_route");
    expect(rows.data.map((r) => [r.event_id, (r as Record<string, unknown>).http_route])).toEqual([[events[0]!.event_id, "/users/:id"]]);
    const detail = await store.getEvent(ns, events[1]!.event_id);
    expect((detail!.event as unknown as RoutedEvent).http_route).toBe("/orders");
    await store.close();
  });
});

describe("a field added in the middle of a copy of the table", () => {
  /** The same route field, beside the path it was matched from. */
  const at = eventFieldTable.findIndex((f) => f.name === "http_req_path") + 1;
  const middle = deriveEventFields([
    ...eventFieldTable.slice(0, at),
    { name: "http_route", type: "text", max: 256, isQueryable: true, shown: "export" },
    ...eventFieldTable.slice(at),
  ]);

  test("new tables have it in its place, tables stored before get it added at their end, and both are written and read alike (DuckDB)", async () => {
    const dir = mkdtempSync(join(tmpdir(), "tapscope-middle-field-"));
    try {
      const path = join(dir, "events.duckdb");
      const [older, newer] = [randomUUID(), randomUUID()];
      const time = 1_760_000_000_000_000;
      const before = await openDuckDbStore({ path });
      await before.insert(older, [tracedEvent({ time })]);
      await before.close();
      const store = await openDuckDbStore({ path, fields: middle });
      for (const ns of [older, newer]) {
        const e = routedEvent("/users/:id", { time: time + 1 });
        await store.insert(ns, [e] as unknown as TracedEvent[]);
        const page = await store.queryRows(ns, { filter: { clauses: [], global: { lowerMs: time / 1000 - 1, upperMs: time / 1000 + 1 } } });
        expect(page.meta.indexOf("http_route")).toBe(page.meta.indexOf("http_req_path") + 1);
        const row = page.data.find((r) => r.event_id === e.event_id) as Record<string, unknown>;
        expect([row.http_route, row.http_req_path, row.http_resp_status_code]).toEqual([
          "/users/:id",
          e.http_req_path,
          e.http_resp_status_code,
        ]);
        const detail = await store.getEvent(ns, e.event_id);
        expect((detail!.event as unknown as RoutedEvent).http_route).toBe("/users/:id");
      }
      await store.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});

describe("the table's rules", () => {
  const base = eventFieldTable as readonly FieldSpec[];
  const refused: Array<[string, readonly FieldSpec[], string]> = [
    ["a name twice", [...base, { name: "service", type: "text", max: 9 }], "service appears twice"],
    ["a name that is not snake_case", [...base, { name: 'x": 1, "y', type: "text", max: 9 }], "is not a lower-case snake_case name"],
    ["text without its limit", [...base, { name: "route", type: "text" }], "text field route needs its limit (max)"],
    ["an int without its range", [...base, { name: "n", type: "int", max: 9 }], "int field n needs its range (min, max)"],
    ["an absent value outside the range", [...base, { name: "n", type: "int", min: 0, max: 9, absent: -1 }], "absent lies outside"],
    ["a body without its flag", [...base, { name: "ws_body", type: "body", cutFlag: "service" }], "needs a flag field as its cutFlag"],
    ["a second event id", [...base, { name: "id2", type: "id" }], "needs exactly one id field, has 2"],
    ["a clause on headers", [...base, { name: "h", type: "headers", isQueryable: true }], "a headers field cannot be a clause column"],
    ["a filter name twice", [...base, { name: "x", type: "text", max: 9, filter: "duration" }], "filter name duration appears twice"],
  ];
  for (const [what, rows, message] of refused) {
    test(`refuses ${what}, saying so`, () => {
      expect(() => deriveEventFields(rows)).toThrow(message);
    });
  }

  test("a stored table lacking columns gets them wherever they are in the table; columns it has that the table lacks are left alone", () => {
    const names = eventLayout.columns.map((c) => c.name);
    expect(missingColumns(names.slice(0, -1)).map((c) => c.name)).toEqual([names.at(-1)!]);
    expect(missingColumns(names.filter((n) => n !== "hostname" && n !== "tags")).map((c) => [c.name, c.fill])).toEqual([
      ["hostname", ""],
      ["tags", "{}"],
    ]);
    expect(missingColumns([...names, "http_route"])).toEqual([]);
  });
});

describe("what the table drives beyond the wire and the store", () => {
  test("the live history's size estimate counts every text field: an event with each at its limit stays within 15% of its JSON", () => {
    const full: Record<string, unknown> = tracedEvent();
    for (const f of eventFieldTable) if (f.type === "text") full[f.name] = "w".repeat(f.max);
    const event = full as TracedEvent;
    const ratio = estimateJsonLength(event) / JSON.stringify(event).length;
    expect(ratio).toBeGreaterThan(0.85);
    expect(ratio).toBeLessThan(1.15);
  });

  test("the live view's filters read the columns the table names for the readable names the store compiles", () => {
    // One example per readable name: a table row given a filter name needs the live evaluator to follow.
    const examples: Record<string, [string, number | string]> = {
      "request.method": ['request.method == "PATCH"', "PATCH"],
      "response.status": ["response.status == 417", 417],
      "request.url": ['request.url == "/x/y"', "/x/y"],
      duration: ["duration >= 417ms", 417_000],
      "tls.server_name": ['tls.server_name == "a.example"', "a.example"],
      "response.unanswered": ['response.unanswered == "reset"', "reset"],
    };
    expect(Object.keys(examples).sort()).toEqual([...eventFields.filterColumns.keys()].sort());
    for (const [name, column] of eventFields.filterColumns) {
      const [text, value] = examples[name]!;
      const parsed = parseFilter(text);
      if (!parsed.ok) throw new Error(parsed.error.message);
      const matches = compileFilter(parsed.expr);
      expect([matches({ ...neutralEvent(), [column]: value }), matches(neutralEvent())]).toEqual([true, false]);
    }
  });

  test("events from the JSON and binary paths and from the store have the table's keys in its order", () => {
    const event = tracedEvent();
    const json = validateEvent(JSON.parse(JSON.stringify(event)));
    const binary = validateEventBatch(encodeEventBatch(1, [event]));
    if (!json.ok || "error" in binary) throw new Error("refused");
    const stored = rowToEvent(
      Object.fromEntries(Object.entries(event).map(([k, v]) => [k, typeof v === "object" ? JSON.stringify(v) : v])),
    );
    for (const made of [json.event, binary.events[0]!, stored]) expect(Object.keys(made)).toEqual(eventFields.names as string[]);
    expect(stored).toEqual(json.event);
  });
});

describe("code made from the table stays on the server", () => {
  test("no page code reaches a module that makes code (the pages' content security policy forbids it)", async () => {
    const makesCode = ["src/lib/protocol/validate-event.ts", "src/lib/protocol/validate-event-batch.ts", "src/lib/protocol/event-size.ts"];
    const root = join(import.meta.dir, "../..");
    const transpiler = new Bun.Transpiler({ loader: "tsx" });
    const seen = new Set<string>();
    const pending = [...new Bun.Glob("src/ui/**/*.{ts,tsx}").scanSync({ cwd: root })];
    while (pending.length > 0) {
      const file = pending.pop()!;
      if (seen.has(file)) continue;
      seen.add(file);
      for (const { path } of transpiler.scanImports(await Bun.file(join(root, file)).text())) {
        if (path.startsWith("~/")) pending.push(`src/${path.slice(2)}`);
        else if (path.startsWith(".")) pending.push(join(file, "..", path));
      }
    }
    expect(seen.size).toBeGreaterThan(50);
    expect(seen.has("src/lib/protocol/event.ts")).toBe(true);
    expect(makesCode.filter((file) => seen.has(file))).toEqual([]);
  });
});
