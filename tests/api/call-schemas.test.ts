import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { type ApiCallName, apiCalls } from "~/lib/protocol/api/calls.ts";
import { startTestApp, type TestApp } from "../support/app.ts";

/** The browser types its calls by lib/protocol/api/calls.ts: each must be the route the server validates with. */
describe("the call map of lib/protocol/api", () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ backend: "pglite" });
  }, 60_000);
  afterAll(() => t.close());

  test("every call is served at POST /api/<name> with its body and 200 schemas", () => {
    const names = Object.keys(apiCalls) as ApiCallName[];
    expect(names.length).toBeGreaterThan(15);
    for (const name of names) {
      const route = t.app.routes.find((r) => r.method === "POST" && r.path === `/api/${name}`);
      expect(route, name).toBeDefined();
      expect(route?.hooks.body, name).toBe(apiCalls[name].body);
      expect((route?.hooks.response as Record<number, unknown> | undefined)?.[200], name).toBe(apiCalls[name].response);
    }
  });
});
