import { afterAll, beforeAll, expect, test } from "bun:test";
import { defaultRouteTemplatesOptions } from "~/engines/routes/route-templates.ts";
import type { TracedEvent } from "~/lib/protocol/event.ts";
import { type Service, startNodeRuntime, startRedis } from "../support/cluster.ts";
import { tracedEvent } from "../support/event-factory.ts";

// Two server nodes' runtimes in one process, each with its own connection to a real Redis: the route guard counts the
// names both nodes ingest, so a position that neither took enough names at alone is folded on both.
let redis: Service & { brokerUrl: string };
beforeAll(async () => {
  redis = await startRedis();
});
afterAll(() => redis?.stop());

test("names ingested on two nodes add up: the position folds on both, for names neither has seen", async () => {
  const [a, b] = [await startNodeRuntime(redis.brokerUrl), await startNodeRuntime(redis.brokerUrl)];
  try {
    const target = { namespaceId: crypto.randomUUID(), linkId: null };
    const routes = (node: typeof a, paths: string[]) => {
      const out: TracedEvent[] = [];
      const off = node.runtime.sinks.add({ accept: (_t, events) => void out.push(...events) });
      const events = paths.map((p) => tracedEvent({ http_req_path: p }));
      node.runtime.ingest.handle(target, { type: "events", seq: 1, events });
      off();
      return out.map((e) => e.http_route);
    };
    const half = Math.ceil(defaultRouteTemplatesOptions.maxNames * 0.6);
    expect(
      routes(
        a,
        Array.from({ length: half }, (_, i) => `/teams/north${i}`),
      ),
    ).toContain("/teams/north0");
    expect(
      routes(
        b,
        Array.from({ length: half }, (_, i) => `/teams/south${i}`),
      ),
    ).toContain("/teams/south0");
    // Alone, neither node has folded.
    const deadline = Date.now() + 10_000;
    let seen: string[] = [];
    while (Date.now() < deadline) {
      seen = [...routes(a, ["/teams/east"]), ...routes(b, ["/teams/west"])];
      if (seen.every((r) => r === "/teams/{name}")) break;
      await Bun.sleep(100);
    }
    expect(seen).toEqual(["/teams/{name}", "/teams/{name}"]);
    // Unrelated positions are not folded on either node.
    expect([...routes(a, ["/teams"]), ...routes(b, ["/health"])]).toEqual(["/teams", "/health"]);
  } finally {
    await a.stop();
    await b.stop();
  }
}, 30_000);

test("patterns an admin set through one node apply on the other", async () => {
  const [a, b] = [await startNodeRuntime(redis.brokerUrl), await startNodeRuntime(redis.brokerUrl)];
  try {
    const namespaceId = crypto.randomUUID();
    a.runtime.routes.setPatterns(namespaceId, ["/repos/{owner}/{repo}"], true);
    const deadline = Date.now() + 10_000;
    while (Date.now() < deadline && b.runtime.routes.route({ namespaceId, linkId: null }, "/repos/x/y") !== "/repos/{owner}/{repo}") {
      await Bun.sleep(50);
    }
    expect(b.runtime.routes.route({ namespaceId, linkId: null }, "/repos/x/y")).toBe("/repos/{owner}/{repo}");
  } finally {
    await a.stop();
    await b.stop();
  }
}, 30_000);
