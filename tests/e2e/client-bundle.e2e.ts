import { beforeAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { brotliDecompressSync, gunzipSync } from "node:zlib";
import type { Page } from "playwright-core";
import type { ClientManifest } from "~/ssr/assets.ts";
import type { Area } from "~/ui/routes.tsx";
import { buildClient, type RunningServer, root, screenshot, signedInSuite, waitForHydration } from "./harness.ts";

// The browser bundle: no server-only code in it, split so that each area of the site loads its own chunk (the landing
// page none of the dashboard's), and what a browser is sent for each: compressed, hydrated in place.
const clientDir = join(root, "build/client");
let manifest: ClientManifest;

/** Text only the dashboard's code has: the requests explorer, the tokens screen, billing. */
const dashboardOnly = ["Drag on the chart to focus a range", "Tracer tokens let ", "Cancel subscription"];
/** Text only the frames have: a shared link's viewer. */
const framesOnly = ["Shared live requests"];
/** The virtual list the explorer and the live frame share. */
const virtualList = "getVirtualItems";

const PHONE = { width: 390, height: 844 };
const DESKTOP = { width: 1440, height: 900 };

const read = (url: string) => readFileSync(join(clientDir, url.replace("/assets/", "")), "utf8");
/** The scripts a page of `area` loads: the entry and the area's chunks. */
const areaScripts = (area: Area) => [manifest.entry, ...(manifest.areas?.[area] ?? [])];
const areaChunk = (area: Area) => manifest.areas?.[area]?.[0] ?? "";

beforeAll(async () => {
  await buildClient();
  manifest = JSON.parse(readFileSync(join(clientDir, "manifest.json"), "utf8"));
}, 120_000);

describe("the build", () => {
  test("the manifest names content-hashed files, and each area's chunk first in its list", () => {
    expect(manifest.entry).toMatch(/^\/assets\/entry-client-[a-z0-9]{6,}\.js$/);
    expect(manifest.css[0]).toMatch(/^\/assets\/app-[0-9a-f]{10}\.css$/);
    for (const file of manifest.files) expect(file).toMatch(/-[A-Za-z0-9]{6,}\.(js|css|json)$/);
    for (const area of ["site", "dashboard", "frames"] as const) {
      expect(areaChunk(area)).toMatch(new RegExp(`^/assets/${area}-area-[a-z0-9]{6,}\\.js$`));
      for (const url of manifest.areas?.[area] ?? []) expect(manifest.files).toContain(url.replace("/assets/", ""));
    }
  });

  test("no server-only module reaches the client bundle", () => {
    const js = manifest.files
      .filter((f) => f.endsWith(".js"))
      .map((f) => readFileSync(join(clientDir, f), "utf8"))
      .join("\n");
    expect(js.length).toBeGreaterThan(10_000);
    for (const needle of [
      "drizzle",
      // The postgres client's own class (the word "postgresql" is product text: a database call's system)
      "PostgresError",
      "pglite",
      "@electric-sql",
      "duckdb",
      "clickhouse",
      "nodemailer",
      "sessionSecret",
      "SESSION_SECRET",
      "node:fs",
      "node:crypto",
      "elysia",
      "renderToReadableStream",
      // Node's Buffer, which the publish codec uses on the server
      "allocUnsafe",
      "latin1Slice",
    ]) {
      expect(`${needle}: ${js.includes(needle)}`).toBe(`${needle}: false`);
    }
    expect(js.includes("__staticRouterHydrationData") && js.includes("Get started")).toBe(true);
  });

  test("the landing page's scripts carry no dashboard or frame code; the dashboard's and the frames' do", () => {
    const landing = areaScripts("site").map(read).join("\n");
    expect(landing).toContain("Zero Code Network Tracer");
    for (const needle of [...dashboardOnly, ...framesOnly, virtualList])
      expect(`${needle}: ${landing.includes(needle)}`).toBe(`${needle}: false`);
    const dashboard = areaScripts("dashboard").map(read).join("\n");
    for (const needle of [...dashboardOnly, virtualList]) expect(dashboard).toContain(needle);
    const frames = areaScripts("frames").map(read).join("\n");
    for (const needle of [...framesOnly, virtualList]) expect(frames).toContain(needle);
    expect(frames).not.toContain(dashboardOnly[0]!);
    // Not one bundle any more: the landing page loads well under the whole app.
    const all = manifest.files.filter((f) => f.endsWith(".js")).reduce((sum, f) => sum + read(f).length, 0);
    expect(landing.length).toBeLessThan(all * 0.75);
  });

  test("each sizeable script and the stylesheet have brotli and gzip copies that decode to it", () => {
    for (const url of [manifest.entry, ...manifest.css, ...Object.values(manifest.areas ?? {}).map((chunks) => chunks[0]!)]) {
      const name = url.replace("/assets/", "");
      const raw = readFileSync(join(clientDir, name));
      expect(manifest.compressed).toContain(`${name}.br`);
      expect(manifest.compressed).toContain(`${name}.gz`);
      expect(brotliDecompressSync(readFileSync(join(clientDir, `${name}.br`))).equals(raw)).toBe(true);
      expect(gunzipSync(readFileSync(join(clientDir, `${name}.gz`))).equals(raw)).toBe(true);
    }
  });

  test("the stylesheet is built with the dark zinc theme and both font stacks", () => {
    const css = read(manifest.css[0]!);
    expect(css).toContain(".bg-zinc-950");
    expect(css).toContain("--font-mono:");
    expect(css).toContain("--font-sans:");
  });
});

describe("in Chromium", () => {
  let server: RunningServer;
  let page: Page;
  let pageErrors: string[];

  const suite = signedInSuite({
    timeoutMs: 20_000,
    prepare: async ({ page }) => {
      await page.setViewportSize(DESKTOP);
      // The server-rendered page's root element, as the HTML parser made it: hydration must keep that very node.
      await page.addInitScript(() => {
        const w = window as unknown as { __ssrRoot?: Element };
        new MutationObserver((_, observer) => {
          const first = document.body?.firstElementChild;
          if (first && first.tagName !== "SCRIPT") {
            w.__ssrRoot = first;
            observer.disconnect();
          }
        }).observe(document, { childList: true, subtree: true });
      });
      // A slow network: each area's chunk arrives well after the entry has run.
      await page.route(/\/assets\/[a-z]+-area-[a-z0-9]+\.js$/, async (route) => {
        await Bun.sleep(1500);
        await route.continue();
      });
    },
  });
  beforeAll(() => {
    ({ server, page, pageErrors } = suite);
  });

  type Loaded = { url: string; encoding: string | undefined };

  /** Opens `path` as a fresh page load and returns what the browser was sent for it, once it has hydrated. */
  async function open(path: string): Promise<{ document: Loaded; scripts: Loaded[] }> {
    const sent: Loaded[] = [];
    // The page's own, not those of a frame it embeds (the Live screen's /iframer).
    const onResponse = (res: import("playwright-core").Response) => {
      if (res.frame() === page.mainFrame()) sent.push({ url: new URL(res.url()).pathname, encoding: res.headers()["content-encoding"] });
    };
    page.on("response", onResponse);
    try {
      await page.goto(`${server.baseUrl}${path}`);
      await waitForHydration(page);
      await page.waitForLoadState("networkidle");
    } finally {
      page.off("response", onResponse);
    }
    const documentPath = new URL(page.url()).pathname;
    const document = sent.findLast((r) => r.url === documentPath);
    if (!document) throw new Error(`no document response for ${documentPath}`);
    return { document, scripts: sent.slice(sent.indexOf(document)).filter((r) => r.url.endsWith(".js")) };
  }

  /** Hydration kept the server's HTML: the same root node, nothing rendered twice beside it. */
  async function hydratedInPlace(): Promise<boolean> {
    return page.evaluate(() => {
      const root = (window as unknown as { __ssrRoot?: Element }).__ssrRoot;
      const rendered = [...document.body.children].filter((el) => el.tagName !== "SCRIPT");
      return root !== undefined && rendered.length === 1 && rendered[0] === root && root.isConnected;
    });
  }

  /** The page at a phone's and a desktop's width, as test-artifacts/<name>-390.png and -1440.png. */
  async function screenshots(name: string): Promise<void> {
    for (const viewport of [PHONE, DESKTOP]) {
      await page.setViewportSize(viewport);
      await screenshot(page, `${name}-${viewport.width}`);
    }
    await page.setViewportSize(DESKTOP);
  }

  const compressed = (loaded: Loaded) =>
    `${loaded.url}: ${loaded.encoding === "br" || loaded.encoding === "gzip" ? "compressed" : loaded.encoding}`;
  const bigScripts = (scripts: Loaded[]) => scripts.filter((s) => manifest.compressed?.includes(`${s.url.replace("/assets/", "")}.br`));

  test("the landing page: compressed HTML and scripts, the entry and the site's chunk only, hydrated in place", async () => {
    const { document, scripts } = await open("/");
    expect(compressed(document)).toBe("/: compressed");
    const urls = scripts.map((s) => s.url);
    expect(urls).toContain(manifest.entry);
    expect(urls).toContain(areaChunk("site"));
    for (const url of urls) expect(areaScripts("site")).toContain(url);
    for (const script of bigScripts(scripts)) expect(compressed(script)).toBe(`${script.url}: compressed`);
    expect(await hydratedInPlace()).toBe(true);
    // Hydrated: the picker answers.
    await page.getByRole("region", { name: "Pick your language" }).getByRole("button", { name: "PHP" }).click();
    await page.getByText("$ tapscope run -- php artisan serve").waitFor();
    await screenshots("chunks-landing");
    expect(pageErrors).toEqual([]);
  });

  test("the live frame and a shared link load the frames' chunk, not the site's or the dashboard's", async () => {
    for (const path of ["/iframer", "/link/abc123"]) {
      const { document, scripts } = await open(path);
      expect(compressed(document)).toBe(`${path}: compressed`);
      const urls = scripts.map((s) => s.url);
      expect(urls).toContain(areaChunk("frames"));
      for (const url of urls) expect(areaScripts("frames")).toContain(url);
      expect(await hydratedInPlace()).toBe(true);
    }
    await screenshots("chunks-link-viewer");
    expect(pageErrors).toEqual([]);
  });

  test("signed in, the dashboard loads its own chunk and no site chunk, hydrated in place; in-app navigation crosses areas", async () => {
    const live = await suite.signIn("chunks@example.test");
    const { document, scripts } = await open(live);
    expect(compressed(document)).toBe(`${document.url}: compressed`);
    const urls = scripts.map((s) => s.url);
    expect(urls).toContain(areaChunk("dashboard"));
    expect(urls).not.toContain(areaChunk("site"));
    for (const url of urls) expect(areaScripts("dashboard")).toContain(url);
    expect(await hydratedInPlace()).toBe(true);
    // The Live screen with its live frame (/iframer) inside.
    await page.frameLocator("iframe").first().locator("body").waitFor();
    await screenshots("chunks-dashboard-live");
    // From the landing page, Start is an in-app navigation to /login, whose loader sends a signed-in user on to the
    // dashboard: its chunk loads, and the dashboard shows, without a page load.
    await open("/");
    await page.evaluate(() => {
      (window as unknown as { __samePage: boolean }).__samePage = true;
    });
    const requested: string[] = [];
    page.on("request", (req) => requested.push(new URL(req.url()).pathname));
    await page.getByRole("link", { name: "Start", exact: true }).first().click();
    await page.waitForURL(/\/dashboard\/[^/]+\/live$/);
    await page.getByRole("heading", { name: "Live" }).waitFor();
    expect(requested).toContain(areaChunk("dashboard"));
    expect(await page.evaluate(() => (window as unknown as { __samePage?: boolean }).__samePage)).toBe(true);
    expect(pageErrors).toEqual([]);
  });
});
