import { describe, expect, test } from "bun:test";
import { RouteTemplates } from "~/engines/routes/route-templates.ts";
import { neutralEvent, type TracedEvent } from "~/lib/protocol/event.ts";

const ns = (id: string) => ({ namespaceId: id, linkId: null });
const a = ns("11111111-1111-4111-8111-111111111111");
const b = ns("22222222-2222-4222-8222-222222222222");

describe("the per-namespace guard", () => {
  test("a position that takes more distinct names than allowed folds into {name}, the names seen before included", () => {
    const routes = new RouteTemplates({ maxNames: 5 });
    const names = ["alice", "bob", "carol", "dave", "erin"];
    expect(names.map((n) => routes.route(a, `/users/${n}/orders`))).toEqual(names.map((n) => `/users/${n}/orders`));
    // A name seen before is counted once.
    expect(routes.route(a, "/users/alice")).toBe("/users/alice");
    expect(routes.route(a, "/users/frank/orders")).toBe("/users/{name}/orders");
    expect(routes.route(a, "/users/alice/orders")).toBe("/users/{name}/orders");
    expect(routes.route(a, "/users/zoe")).toBe("/users/{name}");
    // Other positions and other namespaces are not folded.
    expect(routes.route(a, "/orders/open")).toBe("/orders/open");
    expect(routes.route(b, "/users/frank/orders")).toBe("/users/frank/orders");
  });

  test("values never count as names: ids and UUIDs do not fold their position", () => {
    const routes = new RouteTemplates({ maxNames: 3 });
    for (let i = 0; i < 100; i++) expect(routes.route(a, `/users/${i}/orders/${crypto.randomUUID()}`)).toBe("/users/{id}/orders/{uuid}");
    expect(routes.foldsOf("ns:11111111-1111-4111-8111-111111111111")).toEqual([]);
  });

  test("an admin's patterns win over the templates and the guard", () => {
    const routes = new RouteTemplates({ maxNames: 2 });
    routes.setPatterns(a.namespaceId, ["/users/search", "/users/{login}", "/files/{path*}"]);
    expect(routes.route(a, "/users/search?q=x")).toBe("/users/search");
    expect(routes.route(a, "/users/42")).toBe("/users/{login}");
    expect(routes.route(a, "/files/2024/report.pdf")).toBe("/files/{path*}");
    // Unmatched paths still get templates.
    expect(routes.route(a, "/orders/42")).toBe("/orders/{id}");
    routes.setPatterns(a.namespaceId, []);
    expect(routes.route(a, "/users/42")).toBe("/users/{id}");
  });

  test("assign sets every event's route: HTTP from its path, other kinds none, whatever the publisher sent", () => {
    const routes = new RouteTemplates();
    const http: TracedEvent = { ...neutralEvent(), protocol: "http", http_req_path: "/items/7?x=1", http_route: "/forged" };
    const tcp: TracedEvent = { ...neutralEvent(), protocol: "tcp", http_route: "/forged" };
    routes.assign(a, [http, tcp]);
    expect([http.http_route, tcp.http_route]).toEqual(["/items/{id}", ""]);
  });

  test("memory is bounded: a flood of distinct positions keeps at most the bounds' names", () => {
    const routes = new RouteTemplates({ maxNames: 50, maxNamesPerNamespace: 1000, maxNamesInAll: 3000 });
    for (let n = 0; n < 10; n++) {
      const target = ns(`00000000-0000-4000-8000-00000000000${n}`);
      for (let i = 0; i < 5000; i++) routes.route(target, `/p${i % 700}/q${i}/r${i * 7}`);
    }
    expect(routes.namesHeld).toBeLessThanOrEqual(3000);
    // Folding still works after counts were dropped.
    for (let i = 0; i < 60; i++) routes.route(a, `/team/member${i}x`);
    expect(routes.route(a, "/team/someone")).toBe("/team/{name}");
  });

  test("folds per namespace are bounded too: past them new positions are folded at once", () => {
    const routes = new RouteTemplates({ maxNames: 1, maxFoldsPerNamespace: 3 });
    for (let i = 0; i < 20; i++) {
      routes.route(a, `/k${i}/x`);
      routes.route(a, `/k${i}/y`);
    }
    expect(routes.foldsOf("ns:11111111-1111-4111-8111-111111111111").length).toBeLessThanOrEqual(3);
    expect(routes.route(a, "/brand/new")).toBe("/{name}/{name}");
  });

  test("folds made here are handed to onFold (kept in the database); loaded ones apply at once", () => {
    const folded: string[] = [];
    const routes = new RouteTemplates({ maxNames: 2 }, { onFold: (key, prefix) => folded.push(`${key} ${prefix}`) });
    for (const n of ["x", "y", "z"]) routes.route(a, `/tenants/${n}`);
    expect(folded).toEqual(["ns:11111111-1111-4111-8111-111111111111 /tenants"]);
    const restarted = new RouteTemplates({ maxNames: 2 });
    restarted.load({ patterns: [], folds: [[a.namespaceId, "/tenants"]] });
    expect(restarted.route(a, "/tenants/x")).toBe("/tenants/{name}");
  });
});

describe("across the nodes of a cluster", () => {
  test("names counted on two nodes add up: a position neither saw enough of alone folds on both", () => {
    const one = new RouteTemplates({ maxNames: 10 });
    const two = new RouteTemplates({ maxNames: 10 });
    for (let i = 0; i < 8; i++) one.route(a, `/shops/alpha${i}`);
    for (let i = 0; i < 8; i++) two.route(a, `/shops/beta${i}`);
    // Alone, neither folds.
    expect([one.route(a, "/shops/alpha0"), two.route(a, "/shops/beta0")]).toEqual(["/shops/alpha0", "/shops/beta0"]);
    const fromOne = one.takeShared();
    const fromTwo = two.takeShared();
    expect(fromOne?.names.length).toBeGreaterThan(0);
    two.merge(fromOne!);
    one.merge(fromTwo!);
    expect([one.route(a, "/shops/gamma"), two.route(a, "/shops/delta")]).toEqual(["/shops/{name}", "/shops/{name}"]);
    // What a node merged is not told on again: only its own names and folds go out.
    const next = two.takeShared();
    expect(next?.names ?? []).toEqual([]);
  });

  test("a fold made on one node applies on the other as soon as it is merged", () => {
    const one = new RouteTemplates({ maxNames: 2 });
    const two = new RouteTemplates({ maxNames: 2 });
    for (const n of ["a1x", "b2y", "c3z"]) one.route(a, `/carts/${n}`);
    two.merge(one.takeShared()!);
    expect(two.route(a, "/carts/never-seen-here")).toBe("/carts/{name}");
  });

  test("what is kept for sharing is bounded between two takes", () => {
    const routes = new RouteTemplates({ maxShared: 100 });
    for (let i = 0; i < 1000; i++) routes.route(a, `/n${i}/m${i}`);
    const shared = routes.takeShared()!;
    const count = shared.folds.length + shared.names.reduce((s, [, , h]) => s + h.length, 0);
    expect(count).toBeLessThanOrEqual(100);
  });
});
