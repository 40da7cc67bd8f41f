import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { PUBLIC_URL, startTestApp, type TestApp } from "../support/app.ts";

// The docs as a reader gets them: server-rendered from the built assets (npm test builds the client first).
let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ backend: "pglite" });
}, 60_000);
afterAll(() => t.close());

describe("/docs", () => {
  test("a page is server-rendered with its title, its text, the sidebar and its on-page headings", async () => {
    const res = await t.request("/docs/quickstart");
    expect(res.status).toBe(200);
    const html = String(res.body);
    expect(html).toContain("<title>Quickstart | Tapscope</title>");
    expect(html).toContain('<h2 id="install-the-cli">');
    // The commands name this server (its PUBLIC_URL), not a placeholder.
    expect(html).toContain(`curl -fsSL ${PUBLIC_URL}/install.sh`);
    expect(html).toContain('aria-label="On this page"');
    expect(html).toContain('aria-current="page"');
    expect(html).toContain('placeholder="Search docs"');
  });

  test("the overview lists every page by section; the page JSON is a cached asset", async () => {
    const res = await t.request("/docs");
    expect(res.status).toBe(200);
    expect(String(res.body)).toContain('href="/docs/quickstart"');
    const asset = /"pages":\{[^}]*"quickstart":"(\/assets\/docs-quickstart-[0-9a-f]+\.json)"/.exec(String(res.body))?.[1];
    expect(asset).toBeDefined();
    const json = await t.request(asset!);
    expect(json.status).toBe(200);
    expect(json.headers.get("cache-control")).toContain("immutable");
    expect((json.body as { slug: string }).slug).toBe("quickstart");
  });

  test("an unknown page is a 404 with the router's fallback", async () => {
    const res = await t.request("/docs/no-such-page");
    expect(res.status).toBe(404);
    expect(String(res.body)).toContain("Unexpected Application Error!");
  });
});
