import { describe, expect, test } from "bun:test";
import { Outlet } from "react-router";
import { setLogSink } from "~/lib/server/logger.ts";
import { emptySite } from "~/lib/site-content.ts";
import { createPageRenderer } from "~/ssr/render.tsx";
import { Document } from "~/ui/document.tsx";
import { RootErrorBoundary } from "~/ui/pages/error/root-error-boundary.tsx";
import { defaultShell } from "~/ui/shell.tsx";

// The render pipeline on its own, with routes made for the case under test.
function Broken(): never {
  throw new TypeError("cannot read properties of undefined (reading 'secretConfig')");
}

const render = createPageRenderer([
  {
    id: "root",
    path: "/",
    Component: () => (
      <Document>
        <Outlet />
      </Document>
    ),
    ErrorBoundary: RootErrorBoundary,
    children: [
      { path: "broken", Component: Broken },
      { path: "slow", loader: async () => ({ text: "</script><b>hi</b>" }), Component: () => <p>ok</p> },
    ],
  },
]);
const env = {
  getSelf: async () => null,
  getDocs: async () => ({ index: [], page: null }),
  getContent: async () => [] as never,
  getSite: () => emptySite,
};

describe("server render", () => {
  test("a component that throws while rendering gives the app-wide error screen with status 500, without server internals", async () => {
    const lines: string[] = [];
    const restore = setLogSink((line) => lines.push(line));
    try {
      const res = await render({ request: new Request("http://x/broken"), env, shell: defaultShell });
      const html = await res.text();
      expect(res.status).toBe(500);
      expect(html).toContain("Tapscope ran into a problem.");
      expect(html).toContain("cannot read properties of undefined (reading &#x27;secretConfig&#x27;)");
      expect(html).toContain("TypeError");
      expect(html).not.toContain("/work/");
      expect(html).not.toContain("render.test.tsx");
      expect(lines.some((line) => line.includes("page render failed"))).toBe(true);
    } finally {
      restore();
    }
  });

  test("loader data is embedded for hydration without breaking out of the script", async () => {
    const res = await render({ request: new Request("http://x/slow"), env, shell: defaultShell });
    const html = await res.text();
    expect(res.status).toBe(200);
    expect(html).toContain('"text":"\\u003c/script\\u003e\\u003cb\\u003ehi\\u003c/b\\u003e"');
    expect(html).not.toContain("</script><b>");
    expect(html).toContain('window.__TAPSCOPE_VERSION__={"commitHash":"dev"}');
  });

  test("pages carry a CSP whose nonce is on every script React writes, and nothing runs inline without it", async () => {
    const res = await render({
      request: new Request("http://x.test/slow"),
      env,
      shell: { ...defaultShell, assets: { css: [], js: "/assets/e.js", preload: [] } },
    });
    const csp = res.headers.get("content-security-policy") ?? "";
    const nonce = /'nonce-([^']+)'/.exec(csp)?.[1];
    expect(nonce).toBeDefined();
    expect(csp).toContain("object-src 'none'");
    expect(csp).toContain("connect-src 'self' ws://x.test wss://x.test");
    const html = await res.text();
    const scripts = html.match(/<script\b[^>]*>/g) ?? [];
    expect(scripts.length).toBe(2);
    for (const tag of scripts) expect(tag).toContain(`nonce="${nonce}"`);
    const again = await render({ request: new Request("http://x.test/slow"), env, shell: defaultShell });
    expect(again.headers.get("content-security-policy")).not.toContain(nonce!);
  });

  test("an aborted request does not hang the render", async () => {
    const controller = new AbortController();
    controller.abort();
    const started = performance.now();
    await render({ request: new Request("http://x/slow", { signal: controller.signal }), env, shell: defaultShell }).catch(() => {});
    expect(performance.now() - started).toBeLessThan(2000);
  });
});
