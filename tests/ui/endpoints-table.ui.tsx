import { afterEach, describe, expect, test } from "bun:test";
import { cleanup, fireEvent, render, screen, within } from "@testing-library/react";
import { useState } from "react";
import { parseFilter } from "~/lib/filter/parse.ts";
import type { EndpointRow } from "~/lib/protocol/query.ts";
import { type EndpointSort, EndpointsTable, endpointClauses, endpointFilterText, formatRate } from "~/ui/endpoints/endpoints-table.tsx";

afterEach(cleanup);

// The Endpoints table's own logic: sorting, what a row click filters on (the browser test drives the whole screen).
const row = (over: Partial<EndpointRow>): EndpointRow => ({
  service: "api",
  isOutgoing: false,
  host: "",
  method: "GET",
  route: "/",
  requests: 1,
  clientErrors: 0,
  serverErrors: 0,
  p50: 1000,
  p95: 1000,
  p99: 1000,
  max: 1000,
  bytesIn: 0,
  bytesOut: 0,
  sparkline: [null, 2000, 3000],
  ...over,
});

const rows = [
  row({ route: "/users/{id}", requests: 100, p99: 20_000, serverErrors: 1 }),
  row({ route: "/orders/{uuid}", requests: 10, p99: 900_000 }),
  row({ route: "/health", requests: 50, p99: 500, clientErrors: 25 }),
];

function Table({ onOpen = () => {} }: { onOpen?: (r: EndpointRow) => void }) {
  const [sort, setSort] = useState<EndpointSort>({ key: "requests", dir: "desc" });
  return <EndpointsTable rows={rows} rangeSeconds={3600} sort={sort} onSort={setSort} onOpen={onOpen} />;
}

const order = () =>
  screen
    .getAllByRole("row")
    .slice(1)
    .map((r) => r.getAttribute("data-endpoint"));

describe("Endpoints table", () => {
  test("busiest first; a header sorts by its number, again reverses it", () => {
    render(<Table />);
    expect(order()).toEqual(["GET /users/{id}", "GET /health", "GET /orders/{uuid}"]);
    fireEvent.click(within(screen.getByRole("columnheader", { name: "p99" })).getByRole("button"));
    expect(order()).toEqual(["GET /orders/{uuid}", "GET /users/{id}", "GET /health"]);
    expect(screen.getByRole("columnheader", { name: /p99/ }).getAttribute("aria-sort")).toBe("descending");
    fireEvent.click(within(screen.getByRole("columnheader", { name: /p99/ })).getByRole("button"));
    expect(order()).toEqual(["GET /health", "GET /users/{id}", "GET /orders/{uuid}"]);
    fireEvent.click(within(screen.getByRole("columnheader", { name: "Errors" })).getByRole("button"));
    expect(order()[0]).toBe("GET /health");
  });

  test("a row shows its rate, 4xx and 5xx apart, and opens its endpoint on click and Enter", () => {
    const opened: string[] = [];
    render(<Table onOpen={(r) => opened.push(r.route)} />);
    const health = screen.getAllByRole("row").find((r) => r.getAttribute("data-endpoint") === "GET /health")!;
    expect(health.textContent).toContain("50.0%");
    expect(health.textContent).toContain("0%");
    expect(health.textContent).toContain("0.8/min");
    fireEvent.click(health);
    fireEvent.keyDown(health, { key: "Enter" });
    expect(opened).toEqual(["/health", "/health"]);
  });

  test("what a click filters on parses, whatever the route holds, and keeps an outgoing call's host", () => {
    const text = endpointFilterText({ method: "GET", route: '/a "quoted" \\ {id}' });
    const parsed = parseFilter(text);
    expect(parsed.ok).toBe(true);
    expect(text).toBe('request.method == "GET" && request.route == "/a \\"quoted\\" \\\\ {id}"');
    expect(endpointClauses({ service: "api", isOutgoing: true, host: "api.stripe.com" })).toEqual([
      { type: "String", column: "service", op: "Equals", value: "api" },
      { type: "Number", column: "http_is_outgoing", op: "Equals", value: 1 },
      { type: "String", column: "http_req_host", op: "Equals", value: "api.stripe.com" },
    ]);
    expect(formatRate(7200, 3600)).toBe("2.0/s");
    expect(formatRate(30, 3600)).toBe("0.5/min");
  });
});
