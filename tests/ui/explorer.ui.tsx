import { afterEach, describe, expect, test } from "bun:test";
import { act, cleanup, fireEvent, render, screen, waitFor } from "@testing-library/react";
import { createMemoryRouter, RouterProvider } from "react-router";
import type { TracedEvent } from "~/lib/protocol/event.ts";
import type { HistogramBucket, QueryFilter, ResultRow, RowSort } from "~/lib/protocol/query.ts";
import { gridRange, moveLeftHandle, newInterval, shiftGlobal } from "~/lib/time/range.ts";
import { dragResult, modeAt, xAt } from "~/ui/explorer/brush.ts";
import { decodeState, type ExplorerState, encodeState, requestLink } from "~/ui/explorer/explorer-state.ts";
import { ExplorerView } from "~/ui/explorer/explorer-view.tsx";
import type { QueryClient } from "~/ui/explorer/query-client.ts";
import { rowLimitText } from "~/ui/explorer/results-list.tsx";
import { isSafari, safariText } from "~/ui/explorer/results-panel.tsx";

afterEach(cleanup);

// UI logic only: an in-memory QueryClient over generated rows (the browser tests use the real tunnel).
const H = 3_600_000;
const NOW = Date.UTC(2026, 10, 21, 12, 0, 0);

function makeRows(n: number, startMs: number, endMs: number): ResultRow[] {
  const rows: ResultRow[] = [];
  for (let i = 0; i < n; i++) {
    const t = endMs - ((i + 0.5) * (endMs - startMs)) / n;
    rows.push({
      time: Math.round(t * 1000),
      event_id: `00000000-0000-4000-8000-${String(i).padStart(12, "0")}`,
      http_req_method: "GET",
      http_req_path: `/p/${i}`,
      http_resp_status_code: i % 10 === 0 ? 500 : 200,
      http_duration: 1000 + i,
      http_resp_body_size_bytes_wire: 10,
    });
  }
  return rows;
}

function memoryClient(rows: ResultRow[], options: { failRows?: number; limit?: number; total?: number } = {}) {
  const calls = {
    rows: [] as QueryFilter[],
    histogram: [] as QueryFilter[],
    detail: [] as string[],
    sorts: [] as (RowSort | undefined)[],
    offsets: [] as (number | undefined)[],
  };
  let failures = options.failRows ?? 0;
  const limit = options.limit ?? 10_000;
  const inRange = (f: QueryFilter) => {
    const r = f.focus ?? f.global;
    return rows.filter((row) => row.time / 1000 >= r.lowerMs && row.time / 1000 < r.upperMs);
  };
  const client: QueryClient = {
    async rows(filter, _text, _signal, sort, offset) {
      calls.rows.push(filter);
      calls.sorts.push(sort);
      calls.offsets.push(offset);
      if (failures > 0) {
        failures--;
        throw new Error("database is down");
      }
      const all = inRange(filter);
      if (sort) {
        const sign = sort.dir === "asc" ? 1 : -1;
        all.sort((a, b) => sign * (Number(a[sort.key] ?? 0) - Number(b[sort.key] ?? 0)));
      }
      const n = limit;
      // `total` stands for a range holding more rows than the test makes: every page is then the top of `rows`.
      const from = options.total ? 0 : (offset ?? 0);
      return {
        rows: options.total && (offset ?? 0) >= options.total ? [] : all.slice(from, from + n),
        wasRowLimitExceeded: (options.total ?? all.length) > n,
        actualNumberOfRows: options.total ?? all.length,
        durationInNanoseconds: 1,
      };
    },
    async histogram(filter) {
      calls.histogram.push(filter);
      const g = gridRange({
        startMs: filter.global.lowerMs,
        endMs: filter.global.upperMs,
      });
      const buckets: HistogramBucket[] = Array.from({ length: 120 }, (_, i) => ({
        timeMs: g.startMs + i * g.bucketMs,
        count: 0,
        serverErrors: 0,
        clientErrors: 0,
      }));
      for (const r of inRange({ ...filter, focus: null })) {
        const b = buckets[Math.floor((r.time / 1000 - g.startMs) / g.bucketMs)];
        if (!b) continue;
        b.count++;
        if ((r.http_resp_status_code ?? 0) >= 500) b.serverErrors++;
      }
      return {
        bucketMs: g.bucketMs,
        startMs: g.startMs,
        buckets,
        total: buckets.reduce((s, b) => s + b.count, 0),
      };
    },
    async detail(eventId) {
      calls.detail.push(eventId);
      const row = rows.find((r) => r.event_id === eventId);
      return row
        ? {
            event: {
              ...row,
              protocol: "http",
              http_req_headers: [],
              http_resp_headers: [],
            } as unknown as TracedEvent,
            children: [],
          }
        : null;
    },
    async events() {
      return [];
    },
    async endpoints(filter) {
      return { rows: [], wasRowLimitExceeded: false, quantiles: "exact", sparklineStartMs: filter.global.lowerMs, sparklineStepMs: 0 };
    },
    close() {},
  };
  return { client, calls };
}

function mount(client: QueryClient, state?: ExplorerState, extra = "") {
  const url = state ? `/requests?filter=${encodeURIComponent(encodeState(state))}${extra}` : "/requests";
  const router = createMemoryRouter(
    [
      {
        path: "/requests",
        element: <ExplorerView client={client} namespaceId="ns-test" now={() => NOW} />,
      },
    ],
    { initialEntries: [url] },
  );
  render(<RouterProvider router={router} />);
  const current = () => decodeState(new URLSearchParams(router.state.location.search).get("filter"));
  return { router, current };
}

const global = { startMs: NOW - H, endMs: NOW };
const base: ExplorerState = {
  clauses: [],
  global,
  focus: null,
  text: [],
};
const geo = { width: 1200, height: 160 };

async function drag(from: { x: number; y: number }, to: { x: number; y: number }, expectMode?: string) {
  const svg = screen.getByTestId("histogram");
  await act(async () => {
    fireEvent.pointerDown(svg, {
      clientX: from.x,
      clientY: from.y,
      button: 0,
      pointerId: 1,
    });
  });
  if (expectMode) expect(svg.getAttribute("data-mode")).toBe(expectMode);
  await act(async () => {
    fireEvent.pointerMove(svg, { clientX: to.x, clientY: to.y, pointerId: 1 });
  });
  await act(async () => {
    fireEvent.pointerUp(svg, { clientX: to.x, clientY: to.y, pointerId: 1 });
  });
}

describe("explorer URL state", () => {
  test("state round-trips through base64 JSON; an old link's clauses become filters; junk is refused", () => {
    const s: ExplorerState = {
      ...base,
      focus: { startMs: NOW - 600_000, endMs: NOW - 300_000 },
      clauses: [
        {
          type: "Number",
          column: "http_resp_status_code",
          op: "GreaterThanOrEquals",
          value: 500,
        },
      ],
      text: ['request.url contains "/ü"'],
    };
    // The old column editor's clauses (still in saved links) open as the filters that say the same.
    expect(decodeState(encodeState(s))).toEqual({ ...s, clauses: [], text: ['request.url contains "/ü"', "response.status >= 500"] });
    const plain = { ...s, clauses: [] };
    expect(decodeState(encodeState(plain))).toEqual(plain);
    const wire = JSON.parse(atob(encodeState(s)));
    expect(Object.keys(wire)).toEqual(expect.arrayContaining(["clauses", "global", "focus"]));
    expect(decodeState("not base64!")).toBeNull();
    // A global range the server would refuse falls back to the last hour (tests/lib/time/bounds.test.ts).
    expect(decodeState(btoa('{"global":{"lowerMs":5,"upperMs":1}}'), NOW)?.global).toEqual({ startMs: NOW - H, endMs: NOW });
    expect(
      decodeState(
        btoa(
          JSON.stringify({
            ...wire,
            clauses: [{ type: "String", column: "password", op: "Equals", value: "x" }],
          }),
        ),
      )?.clauses,
    ).toEqual([]);
  });

  test("no filter parameter: the last hour is written into the URL without a history entry", async () => {
    const { client } = memoryClient([]);
    const { current, router } = mount(client);
    await waitFor(() => expect(current()).not.toBeNull());
    expect(current()!.global).toEqual({ startMs: NOW - H, endMs: NOW });
    expect(String(router.state.historyAction)).toBe("REPLACE");
  });

  test("a URL reopens the same view: focus and rows of the focus", async () => {
    const rows = makeRows(120, global.startMs, global.endMs);
    const { client, calls } = memoryClient(rows);
    const focus = { startMs: NOW - 30 * 60_000, endMs: NOW - 15 * 60_000 };
    mount(client, { ...base, focus });
    await waitFor(() => expect(screen.getByTestId("result-count").textContent).toBe("30 requests"));
    expect(calls.rows.at(-1)!.focus).toEqual({
      lowerMs: focus.startMs,
      upperMs: focus.endMs,
    });
    expect(screen.getByTestId("brush").getAttribute("data-start")).toBe(String(focus.startMs));
  });
});

describe("brush modes (applied on release)", () => {
  test("NewInterval: drag across empty chart sets a snapped focus; rows follow, histogram is not re-queried", async () => {
    const rows = makeRows(240, global.startMs, global.endMs);
    const { client, calls } = memoryClient(rows);
    const { current } = mount(client, base);
    await waitFor(() => expect(screen.getByTestId("result-count").textContent).toBe("240 requests"));
    const histBefore = calls.histogram.length;
    await drag({ x: 310, y: 50 }, { x: 605, y: 50 }, "NewInterval");
    const expected = newInterval(global, global.startMs + (310 / 1200) * H, global.startMs + (605 / 1200) * H);
    await waitFor(() => expect(current()!.focus).toEqual(expected));
    expect(expected.startMs % 30_000).toBe(0);
    expect(expected.endMs % 30_000).toBe(0);
    await waitFor(() =>
      expect(calls.rows.at(-1)!.focus).toEqual({
        lowerMs: expected.startMs,
        upperMs: expected.endMs,
      }),
    );
    expect(calls.histogram.length).toBe(histBefore);
  });

  test("LeftHandle, RightHandle and Pan modes from where the press lands", async () => {
    const { client } = memoryClient([]);
    const focus = { startMs: NOW - 40 * 60_000, endMs: NOW - 20 * 60_000 };
    const { current } = mount(client, { ...base, focus });
    await waitFor(() => screen.getByTestId("brush"));
    const left = xAt(global, geo, focus.startMs);
    const right = xAt(global, geo, focus.endMs);
    expect(modeAt(global, focus, geo, left + 2, 10)).toBe("LeftHandle");
    expect(modeAt(global, focus, geo, right - 2, 10)).toBe("RightHandle");
    expect(modeAt(global, focus, geo, (left + right) / 2, 150)).toBe("Pan");
    expect(modeAt(global, focus, geo, (left + right) / 2, 40)).toBe("NewInterval");

    // Left handle dragged past the right one stops one bucket before the focus end.
    await drag({ x: left, y: 20 }, { x: right + 200, y: 20 }, "LeftHandle");
    await waitFor(() => expect(current()!.focus).toEqual(moveLeftHandle(global, focus, global.startMs + ((right + 200) / 1200) * H)));
    expect(current()!.focus!.endMs).toBe(focus.endMs);
    expect(current()!.focus!.startMs).toBe(focus.endMs - 30_000);
  });

  test("Pan keeps the width and stays inside the global range", async () => {
    const { client } = memoryClient([]);
    const focus = { startMs: NOW - 40 * 60_000, endMs: NOW - 20 * 60_000 };
    const { current } = mount(client, { ...base, focus });
    await waitFor(() => screen.getByTestId("brush"));
    const mid = (xAt(global, geo, focus.startMs) + xAt(global, geo, focus.endMs)) / 2;
    await drag({ x: mid, y: 150 }, { x: mid + 5000, y: 150 }, "Pan");
    await waitFor(() =>
      expect(current()!.focus).toEqual({
        startMs: NOW - 20 * 60_000,
        endMs: NOW,
      }),
    );
    expect(dragResult("Pan", global, focus, geo, mid, mid - 100)).toEqual({
      startMs: focus.startMs - 5 * 60_000,
      endMs: focus.endMs - 5 * 60_000,
    });
  });
});

describe("range controls", () => {
  test("shift back, zoom, clear, and browser back restores the previous view", async () => {
    const { client } = memoryClient([]);
    const focus = { startMs: NOW - 40 * 60_000, endMs: NOW - 20 * 60_000 };
    const { current, router } = mount(client, { ...base, focus });
    await waitFor(() => screen.getByTestId("brush"));
    fireEvent.click(screen.getByRole("button", { name: "Zoom to focus" }));
    await waitFor(() => expect(current()!.global).toEqual(focus));
    expect(current()!.focus).toBeNull();
    fireEvent.click(screen.getByRole("button", { name: "Shift back" }));
    await waitFor(() => expect(current()!.global).toEqual(shiftGlobal(focus, -1)));
    expect(current()!.global.startMs).toBe(focus.startMs - 30 * 30_000); // 20 min span: 30 s buckets
    await act(() => router.navigate(-1));
    await waitFor(() => expect(current()!.global).toEqual(focus));
    await act(() => router.navigate(-1));
    await waitFor(() => expect(current()!.focus).toEqual(focus));
  });

  test("Go jumps to an ISO 8601 time, with or without Z, and says why it cannot parse instead of greying out", async () => {
    localStorage.removeItem("tapscope:timeZone");
    const { client } = memoryClient([]);
    const { current } = mount(client, base);
    const input = await screen.findByLabelText("Jump to time (UTC)");
    const go = screen.getByRole("button", { name: "Go" });
    fireEvent.change(input, { target: { value: "2026-11-31 10:00:00" } });
    expect(go.hasAttribute("disabled")).toBe(false);
    fireEvent.click(go);
    expect((await screen.findByRole("alert")).textContent).toBe("2026-11-31 is not a date.");
    fireEvent.change(input, { target: { value: "yesterday" } });
    expect(screen.queryByRole("alert")).toBeNull();
    fireEvent.click(go);
    expect((await screen.findByRole("alert")).textContent).toContain('"yesterday" is not a time.');
    fireEvent.change(input, { target: { value: "2026-11-20T10:00:00" } });
    fireEvent.click(go);
    const t = Date.UTC(2026, 10, 20, 10);
    await waitFor(() => expect(current()!.global).toEqual({ startMs: t - H / 2, endMs: t + H / 2 }));
    expect(screen.queryByRole("alert")).toBeNull();
    fireEvent.change(input, { target: { value: "2026-11-19T10:00:00+02:00" } });
    fireEvent.click(go);
    const t2 = Date.UTC(2026, 10, 19, 8);
    await waitFor(() => expect(current()!.global).toEqual({ startMs: t2 - H / 2, endMs: t2 + H / 2 }));
  });

  test("presets end now; Now keeps the duration", async () => {
    const { client } = memoryClient([]);
    const { current } = mount(client, { ...base, global: { startMs: NOW - 5 * H, endMs: NOW - 3 * H } });
    fireEvent.click(await screen.findByRole("button", { name: "Now" }));
    await waitFor(() => expect(current()!.global).toEqual({ startMs: NOW - 2 * H, endMs: NOW }));
    fireEvent.click(screen.getByRole("button", { name: "6h" }));
    await waitFor(() => expect(current()!.global).toEqual({ startMs: NOW - 6 * H, endMs: NOW }));
    expect(screen.getByText("bucket 5m").textContent).toBe("bucket 5m");
  });

  test("the UTC/Local toggle is the browser's one setting, not the URL's", async () => {
    localStorage.removeItem("tapscope:timeZone");
    const { client } = memoryClient([]);
    const { current } = mount(client, base);
    const before = new URLSearchParams(window.location.search).get("filter");
    fireEvent.click(await screen.findByRole("button", { name: "Local" }));
    await waitFor(() => expect(localStorage.getItem("tapscope:timeZone")).toBe("Local"));
    expect(screen.getByRole("button", { name: "Local" }).getAttribute("aria-pressed")).toBe("true");
    expect(JSON.parse(atob(new URLSearchParams(window.location.search).get("filter") ?? before ?? btoa("{}")))).not.toHaveProperty("tz");
    expect(current()).not.toHaveProperty("tz");
    localStorage.removeItem("tapscope:timeZone");
  });
});

describe("results", () => {
  test("the row-limit message, and a failed query shows a message and a retry", async () => {
    const rows = makeRows(10_050, global.startMs, global.endMs);
    const { client, calls } = memoryClient(rows, { failRows: 1 });
    mount(client, base);
    const alert = await screen.findByText(/The requests could not be loaded: database is down/);
    fireEvent.click(alert.querySelector("button")!);
    await waitFor(() => expect(screen.getByTestId("row-limit").textContent).toBe(rowLimitText(10_050)));
    expect(rowLimitText(12345)).toBe("Rows 1–10,000 of 12,345.");
    // The same number, written the same way, as the count above it.
    expect(screen.getByTestId("result-count").textContent).toBe("10,050 requests");
    expect(screen.getByTestId("row-limit").textContent).toContain("of 10,050");
    // The failed try, then the retry.
    expect(calls.rows.length).toBe(2);
    await waitFor(() => expect(document.querySelector("[role=table][aria-label=Results]")?.getAttribute("aria-rowcount")).toBe("10000"));
  });

  test("filter chips apply through the URL; a bad filter shows its error and is rolled back", async () => {
    const { client, calls } = memoryClient([]);
    const { current } = mount(client, base);
    const input = await screen.findByLabelText("Filter");
    fireEvent.change(input, { target: { value: "response.status == 500" } });
    fireEvent.keyDown(input, { key: "Enter" });
    await waitFor(() => expect(current()!.text).toEqual(["response.status == 500"]));
    const bad = await screen.findByLabelText("Filter");
    fireEvent.change(bad, { target: { value: "response.nope == 1" } });
    fireEvent.keyDown(bad, { key: "Enter" });
    await screen.findByRole("alert");
    expect(current()!.text).toEqual(["response.status == 500"]);
    expect(calls.rows.length).toBeGreaterThan(1);
  });

  test("the search box adds a bodies-or-headers filter; an empty or over-long search says why", async () => {
    const { client } = memoryClient([]);
    const { current } = mount(client, base);
    const search = await screen.findByLabelText("Search headers and bodies");
    fireEvent.change(search, { target: { value: "zebra-7781" } });
    fireEvent.submit(search.closest("form")!);
    await waitFor(() =>
      expect(current()!.text).toEqual([
        'request.body icontains "zebra-7781" || response.body icontains "zebra-7781" || request.headers icontains "zebra-7781" || response.headers icontains "zebra-7781"',
      ]),
    );
    const again = await screen.findByLabelText("Search headers and bodies");
    fireEvent.change(again, { target: { value: "y".repeat(5000) } });
    fireEvent.submit(again.closest("form")!);
    expect((await screen.findByRole("alert")).textContent).toContain("at most 1,024 characters");
    expect(current()!.text).toHaveLength(1);
  });

  test("the filter input completes fields, operators and the services on screen", async () => {
    const rows = makeRows(3, global.startMs, global.endMs).map((r, i) => ({ ...r, service: i === 0 ? "checkout" : "api" }));
    const { client } = memoryClient(rows);
    mount(client, base);
    await waitFor(() => expect(screen.getByTestId("result-count").textContent).toBe("3 requests"));
    const input = (await screen.findByLabelText("Filter")) as HTMLInputElement;
    fireEvent.focus(input);
    fireEvent.change(input, { target: { value: "serv" } });
    const list = await screen.findByRole("list", { name: "Completions" });
    expect(list.textContent).toContain("service");
    fireEvent.keyDown(input, { key: "Tab" });
    expect(input.value).toBe("service ");
    fireEvent.change(input, { target: { value: 'service == "ch' } });
    fireEvent.keyDown(input, { key: "ArrowDown" });
    fireEvent.keyDown(input, { key: "Enter" });
    expect(input.value).toBe('service == "checkout"');
  });

  test("clicking a row opens the request detail from the detail query", async () => {
    const rows = makeRows(5, global.startMs, global.endMs);
    const { client, calls } = memoryClient(rows);
    mount(client, base);
    await waitFor(() => expect(screen.getByTestId("result-count").textContent).toBe("5 requests"));
    const row = document.querySelector(`[data-event-id="${rows[2]!.event_id}"]`)!;
    fireEvent.click(row);
    await screen.findByRole("region", { name: "Request detail" });
    expect(calls.detail).toEqual([rows[2]!.event_id]);
  });

  test("a column's header asks the store for that sort, kept in the URL; a URL with a sort and an event reopens both", async () => {
    const rows = makeRows(5, global.startMs, global.endMs);
    const { client, calls } = memoryClient(rows);
    const { router } = mount(client, base);
    await waitFor(() => expect(screen.getByTestId("result-count").textContent).toBe("5 requests"));
    expect(calls.sorts.at(-1)).toEqual({ key: "time", dir: "desc" });
    fireEvent.click(screen.getByRole("button", { name: /^Duration/ }));
    await waitFor(() => expect(calls.sorts.at(-1)).toEqual({ key: "http_duration", dir: "desc" }));
    expect(new URLSearchParams(router.state.location.search).get("sort")).toBe("duration.desc");
    await waitFor(() => expect(document.querySelector("[data-event-id]")?.getAttribute("data-event-id")).toBe(rows[4]!.event_id));
    fireEvent.click(screen.getByRole("button", { name: /^Duration/ }));
    await waitFor(() => expect(calls.sorts.at(-1)).toEqual({ key: "http_duration", dir: "asc" }));
    fireEvent.click(document.querySelector(`[data-event-id="${rows[1]!.event_id}"]`)!);
    await screen.findByRole("region", { name: "Request detail" });
    expect(new URLSearchParams(router.state.location.search).get("event")).toBe(rows[1]!.event_id);
    cleanup();

    const again = memoryClient(rows);
    mount(again.client, base, `&sort=status.asc&event=${rows[3]!.event_id}`);
    await screen.findByRole("region", { name: "Request detail" });
    expect(again.calls.detail).toEqual([rows[3]!.event_id]);
    await waitFor(() => expect(again.calls.sorts.at(-1)).toEqual({ key: "http_resp_status_code", dir: "asc" }));
    expect(screen.getByRole("columnheader", { name: /Status/ }).getAttribute("aria-sort")).toBe("ascending");
  });

  test("Next and Previous page through the sort, kept in the URL; another sort or range starts at the first page", async () => {
    const rows = makeRows(20_050, global.startMs, global.endMs);
    const { client, calls } = memoryClient(rows);
    const { router, current } = mount(client, base);
    const param = () => new URLSearchParams(router.state.location.search).get("page");
    const firstRow = () => document.querySelector("[role=row][data-event-id]")?.getAttribute("data-event-id");
    await waitFor(() => expect(screen.getByTestId("row-limit").textContent).toBe("Rows 1–10,000 of 20,050."));
    expect(screen.queryByRole("button", { name: /Previous/ })).toBeNull();
    fireEvent.click(screen.getByRole("button", { name: "Next 10,000 ›" }));
    await waitFor(() => expect(screen.getByTestId("row-limit").textContent).toBe("Rows 10,001–20,000 of 20,050."));
    expect(param()).toBe("2");
    expect(calls.offsets.at(-1)).toBe(10_000);
    // The results' own page shows the same page.
    const own = new URL(screen.getByRole("link", { name: "Open these results on their own page" }).getAttribute("href")!, "http://t");
    expect(own.searchParams.get("page")).toBe("2");
    // The 10,001st row of the sort heads the list, and the list shows this page's rows only.
    expect(firstRow()).toBe(rows[10_000]!.event_id);
    expect(document.querySelector("[role=table][aria-label=Results]")?.getAttribute("aria-rowcount")).toBe("10000");
    // The last page says how many remain and ends there.
    fireEvent.click(screen.getByRole("button", { name: "Next 50 ›" }));
    await waitFor(() => expect(screen.getByTestId("row-limit").textContent).toBe("Rows 20,001–20,050 of 20,050."));
    expect(firstRow()).toBe(rows[20_000]!.event_id);
    expect(screen.queryByRole("button", { name: /Next/ })).toBeNull();
    fireEvent.click(screen.getByRole("button", { name: "‹ Previous 10,000" }));
    await waitFor(() => expect(param()).toBe("2"));
    await waitFor(() => expect(firstRow()).toBe(rows[10_000]!.event_id));
    // Another sort starts at its top.
    fireEvent.click(screen.getByRole("button", { name: /^Duration/ }));
    await waitFor(() => expect(calls.sorts.at(-1)).toEqual({ key: "http_duration", dir: "desc" }));
    expect(param()).toBeNull();
    expect(calls.offsets.at(-1)).toBe(0);
    await waitFor(() => expect(firstRow()).toBe(rows[20_049]!.event_id));
    // So does another range.
    fireEvent.click(screen.getByRole("button", { name: /^Next/ }));
    await waitFor(() => expect(param()).toBe("2"));
    fireEvent.click(screen.getByRole("button", { name: "Shift back" }));
    await waitFor(() => expect(current()).not.toBeNull());
    await waitFor(() => expect(calls.offsets.at(-1)).toBe(0));
    expect(param()).toBeNull();
    cleanup();

    // A reload of a later page asks the store for that page first.
    const again = memoryClient(rows);
    mount(again.client, base, "&page=2&sort=duration.asc");
    await waitFor(() => expect(screen.getByTestId("row-limit").textContent).toBe("Rows 10,001–20,000 of 20,050."));
    expect(again.calls.offsets).toEqual([10_000]);
    expect(firstRow()).toBe(rows[10_000]!.event_id);
  });

  test("the deepest page says to narrow the range or the filters; a page past the rows leads back; a bad page is the first", async () => {
    const rows = makeRows(10_000, global.startMs, global.endMs);
    const deep = memoryClient(rows, { total: 1_234_567 });
    mount(deep.client, base, "&sort=duration.desc&page=11");
    await waitFor(() =>
      expect(screen.getByTestId("row-limit").textContent).toBe(
        "Rows 100,001–110,000 of 1,234,567. The list pages no further than row 110,000 of a sort: narrow the range or the filters to see more.",
      ),
    );
    expect(deep.calls.offsets).toEqual([100_000]);
    expect(screen.queryByRole("button", { name: /^Next/ })).toBeNull();
    expect((screen.getByRole("button", { name: "‹ Previous 10,000" }) as HTMLButtonElement).disabled).toBe(false);
    cleanup();

    // The rows expired since the link was made: the page is empty and says so, with the way back.
    const gone = memoryClient(rows.slice(0, 50), { total: 50 });
    const { router } = mount(gone.client, base, "&page=3");
    await waitFor(() =>
      expect(screen.getByTestId("row-limit").textContent).toBe("No rows here: the 50 matching rows end before row 20,001."),
    );
    expect(screen.queryByText("No requests in this time range match.")).toBeNull();
    fireEvent.click(screen.getByRole("button", { name: "« First page" }));
    await waitFor(() => expect(gone.calls.offsets.at(-1)).toBe(0));
    expect(new URLSearchParams(router.state.location.search).get("page")).toBeNull();
    await waitFor(() => expect(screen.queryByTestId("row-limit")).toBeNull());
    cleanup();

    // A request's link opens it in a list around its time, from the top: no sort, no page.
    const link = new URL(requestLink("https://t.example/requests?filter=x&sort=duration.asc&page=3", rows[0]!));
    expect([link.searchParams.get("sort"), link.searchParams.get("page"), link.searchParams.get("event")]).toEqual([
      null,
      null,
      rows[0]!.event_id,
    ]);

    // A page the store would refuse, or not a page at all, is the first.
    for (const bad of ["12", "0", "-1", "2.5", "x", "1e1"]) {
      const c = memoryClient(rows.slice(0, 5));
      mount(c.client, base, `&page=${bad}`);
      await waitFor(() => expect(screen.getByTestId("result-count").textContent).toBe("5 requests"));
      expect({ bad, offsets: c.calls.offsets }).toEqual({ bad, offsets: [0] });
      cleanup();
    }
  });

  test("Safari is detected (Chrome and Firefox on macOS are not)", () => {
    expect(
      isSafari("Mozilla/5.0 (Macintosh; Intel Mac OS X 14_5) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Safari/605.1.15"),
    ).toBe(true);
    expect(
      isSafari("Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 Safari/537.36"),
    ).toBe(false);
  });
});

describe("Safari", () => {
  test("the results panel is covered by the overlay text", async () => {
    const original = navigator.userAgent;
    Object.defineProperty(navigator, "userAgent", {
      value: "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_5) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Safari/605.1.15",
      configurable: true,
    });
    try {
      const { client } = memoryClient([]);
      mount(client, base);
      const overlay = await screen.findByText(safariText);
      expect(overlay.getAttribute("role")).toBe("alert");
    } finally {
      Object.defineProperty(navigator, "userAgent", { value: original, configurable: true });
    }
  });
});
