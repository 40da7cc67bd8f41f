import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { brotliCompressSync, brotliDecompressSync, gunzipSync } from "node:zlib";
import { mapAssetSource } from "~/ssr/assets.ts";
import { pageRoutes } from "~/ssr/page-routes.ts";
import { startTestApp, type TestApp } from "../support/app.ts";

// Server render and routing of the pages, through createApp on PGlite (no browser: see tests/e2e for that).
let t: TestApp;

beforeAll(async () => {
  t = await startTestApp({ backend: "pglite", env: { GITHUB_CLIENT_ID: "gh-id", GITHUB_CLIENT_SECRET: "gh-secret" } });
}, 60_000);
afterAll(() => t.close());

const page = (path: string, cookie?: string) => t.request(path, cookie ? { headers: { cookie } } : {});

describe("routes of the spec's route table", () => {
  test.each([
    "/",
    "/pricing",
    "/docs",
    "/docs/nodejs-express",
    "/docs/kubernetes",
    "/changelog",
    "/discord",
    "/customers",
    "/customers/example-payments",
    "/blog",
    "/blog/http2-preface",
    "/blog/grpc-debugging",
    "/link/some/abc123",
    "/link/abc123",
    "/login",
    "/iframer",
    "/minified/",
  ])("%s renders a streamed HTML page", async (path) => {
    const res = await page(path);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/html; charset=utf-8");
    expect(String(res.body)).toStartWith("<!DOCTYPE html><html");
    expect(String(res.body)).toContain("window.__staticRouterHydrationData=");
  });

  test("unknown routes are 404 with the router fallback text", async () => {
    for (const path of ["/nope", "/dashboardx", "/blog/unknown-post/x", "/customers/acme", "/docs/no-such-page"]) {
      const res = await page(path);
      expect(res.status).toBe(404);
      expect(String(res.body)).toContain("Unexpected Application Error!");
      // Inside the site's header and footer, not a bare page.
      expect(String(res.body)).toContain('<nav aria-label="Site"');
      expect(String(res.body)).toContain("<footer");
    }
  });

  test("unknown /api paths stay JSON", async () => {
    const res = await page("/api/NoSuchCall");
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ error: "not found" });
  });

  test("/link without an id goes home", async () => {
    for (const path of ["/link", "/link/"]) {
      const res = await page(path);
      expect(res.status).toBe(302);
      expect(res.headers.get("location")).toBe("/");
    }
  });
});

describe("sign-in redirects", () => {
  test("signed out: /dashboard goes to /login, deeper pages carry next", async () => {
    expect((await page("/dashboard")).headers.get("location")).toBe("/login");
    const deep = await page("/dashboard/prod/users?x=1");
    expect(deep.status).toBe(302);
    expect(deep.headers.get("location")).toBe(`/login?next=${encodeURIComponent("/dashboard/prod/users?x=1")}`);
  });

  test("a forged or revoked session counts as signed out", async () => {
    const res = await page("/dashboard", "tapscope_session=not-a-jwt");
    expect(res.headers.get("location")).toBe("/login");
  });

  test("signed in: /login goes to /dashboard and the dashboard renders", async () => {
    const user = await t.user("pages-user@example.test");
    const login = await page("/login", user.cookie);
    expect(login.status).toBe(302);
    expect(login.headers.get("location")).toBe("/dashboard");
    const dashboard = await page("/dashboard/anything/tokens", user.cookie);
    expect(dashboard.status).toBe(200);
    expect(String(dashboard.body)).toContain("pages-user@example.test");
  });

  test("signed in: a namespace without a screen redirects to its Live screen", async () => {
    const user = await t.user("pages-ns@example.test");
    const res = await page("/dashboard/my%20ns?event=x", user.cookie);
    expect(res.status).toBe(302);
    expect(res.headers.get("location")).toBe("/dashboard/my%20ns/live?event=x");
    expect((await page("/dashboard/prod/", user.cookie)).headers.get("location")).toBe("/dashboard/prod/live");
  });
});

describe("login page", () => {
  test("shows only the configured OAuth provider, with next forwarded", async () => {
    const html = String((await page("/login?next=%2Fdashboard%2Fprod%2Flive")).body);
    expect(html).toContain("Continue with Github");
    expect(html).not.toContain("Continue with Google");
    expect(html).toContain('href="/api/GithubRedirect?next=%2Fdashboard%2Fprod%2Flive"');
  });

  test("a foreign next is dropped", async () => {
    const html = String((await page("/login?next=%2F%2Fevil.example%2Fx")).body);
    expect(html).toContain('href="/api/GithubRedirect"');
    expect(html).not.toContain('evil.example/x"');
  });

  test("?error= text is never shown: unknown codes get a generic message, known codes our own words", async () => {
    const attack = "Your account is locked. Call +1 555 0100 to unlock it</script><script>alert(1)</script>";
    const html = String((await page(`/login?error=${encodeURIComponent(attack)}`)).body);
    expect(html).not.toContain("555 0100");
    expect(html).not.toContain("alert(1)");
    expect(html).toContain("Sign-in failed. Try again.");
    const known = String((await page("/login?error=link_invalid")).body);
    expect(known).toContain("This sign-in link is invalid, used or expired.");
    expect(known).not.toContain('link_invalid"');
    expect(String((await page("/login?error=__proto__")).body)).toContain("Sign-in failed. Try again.");
  });
});

describe("assets", () => {
  const js = new Blob(["console.log(1)"]);
  const css = new Blob(["body{}"]);
  const assets = mapAssetSource(
    new Map([
      ["entry-client-abc.js", js],
      ["app-def.css", css],
    ]),
    { entry: "/assets/entry-client-abc.js", css: ["/assets/app-def.css"], files: ["entry-client-abc.js", "app-def.css"] },
  );
  const pages = () => pageRoutes({ config: t.config, ctx: t.ctx }, { assets });

  test("hashed assets are served immutable with their content type", async () => {
    const res = await pages().handle(new Request("http://x/assets/entry-client-abc.js"));
    expect(res.status).toBe(200);
    expect(res.headers.get("cache-control")).toBe("public, max-age=31536000, immutable");
    expect(res.headers.get("content-type")).toBe("text/javascript; charset=utf-8");
    expect(await res.text()).toBe("console.log(1)");
    const style = await pages().handle(new Request("http://x/assets/app-def.css"));
    expect(style.headers.get("content-type")).toBe("text/css; charset=utf-8");
  });

  test("pages link the manifest's stylesheet and boot the hashed entry as a module", async () => {
    const html = await (await pages().handle(new Request("http://x/login"))).text();
    expect(html).toContain('<link rel="stylesheet" href="/assets/app-def.css"/>');
    expect(html).toMatch(/<script type="module" src="\/assets\/entry-client-abc.js"[^>]*><\/script>/);
  });

  test("browsers that accept gzip get the precompressed copy", async () => {
    const gz = new Blob([Bun.gzipSync(new TextEncoder().encode("console.log(1)"))]);
    const source = mapAssetSource(
      new Map([
        ["e.js", js],
        ["e.js.gz", gz],
      ]),
      null,
    );
    const routes = pageRoutes({ config: t.config, ctx: t.ctx }, { assets: source });
    const zipped = await routes.handle(new Request("http://x/assets/e.js", { headers: { "accept-encoding": "gzip, deflate, br" } }));
    expect(zipped.headers.get("content-encoding")).toBe("gzip");
    expect(zipped.headers.get("vary")).toBe("accept-encoding");
    expect(new TextDecoder().decode(Bun.gunzipSync(new Uint8Array(await zipped.arrayBuffer())))).toBe("console.log(1)");
    const plain = await routes.handle(new Request("http://x/assets/e.js"));
    expect(plain.headers.get("content-encoding")).toBeNull();
    expect(await plain.text()).toBe("console.log(1)");
    expect((await routes.handle(new Request("http://x/assets/e.js.gz"))).status).toBe(404);
  });

  test("unknown assets and the manifest itself are 404", async () => {
    for (const path of ["/assets/nope.js", "/assets/manifest.json", "/assets/..%2F..%2Fpackage.json"]) {
      const res = await pages().handle(new Request(`http://x${path}`));
      expect(res.status).toBe(404);
    }
  });
});

describe("compression", () => {
  const source = "console.log('tapscope');".repeat(200);
  const brotli = new Blob([brotliCompressSync(source)]);
  const gzip = new Blob([Bun.gzipSync(new TextEncoder().encode(source))]);
  const assets = mapAssetSource(
    new Map([
      ["entry-client-abc.js", new Blob([source])],
      ["entry-client-abc.js.br", brotli],
      ["entry-client-abc.js.gz", gzip],
      ["tiny-abc.js", new Blob(["1"])],
    ]),
    {
      entry: "/assets/entry-client-abc.js",
      css: [],
      files: ["entry-client-abc.js", "tiny-abc.js"],
      areas: {
        site: ["/assets/site-area-s1.js", "/assets/chunk-shared.js"],
        dashboard: ["/assets/dashboard-area-d1.js", "/assets/chunk-shared.js"],
        frames: ["/assets/frames-area-f1.js"],
      },
    },
  );
  const routes = () => pageRoutes({ config: t.config, ctx: t.ctx }, { assets });
  const get = (path: string, acceptEncoding?: string) =>
    routes().handle(new Request(`http://x${path}`, acceptEncoding === undefined ? {} : { headers: { "accept-encoding": acceptEncoding } }));
  const body = async (res: Response) => Buffer.from(await res.arrayBuffer());

  test("an asset goes out in brotli where the browser takes it, else gzip, else as it is; cached immutable in each", async () => {
    const br = await get("/assets/entry-client-abc.js", "gzip, deflate, br, zstd");
    expect(br.headers.get("content-encoding")).toBe("br");
    expect(brotliDecompressSync(await body(br)).toString()).toBe(source);
    const gz = await get("/assets/entry-client-abc.js", "gzip, deflate");
    expect(gz.headers.get("content-encoding")).toBe("gzip");
    expect(gunzipSync(await body(gz)).toString()).toBe(source);
    const refused = await get("/assets/entry-client-abc.js", "br;q=0, gzip;q=0");
    expect(refused.headers.get("content-encoding")).toBeNull();
    expect(await refused.text()).toBe(source);
    for (const res of [br, gz, refused]) {
      expect(res.headers.get("vary")).toBe("accept-encoding");
      expect(res.headers.get("cache-control")).toBe("public, max-age=31536000, immutable");
      expect(res.headers.get("content-type")).toBe("text/javascript; charset=utf-8");
    }
  });

  test("a file without compressed copies is sent as it is; the copies have no address of their own", async () => {
    const tiny = await get("/assets/tiny-abc.js", "gzip, br");
    expect(tiny.headers.get("content-encoding")).toBeNull();
    expect(await tiny.text()).toBe("1");
    for (const path of ["/assets/entry-client-abc.js.br", "/assets/entry-client-abc.js.gz"])
      expect((await get(path, "br")).status).toBe(404);
  });

  test("pages stream compressed HTML that decodes to the same page, and say it varies by Accept-Encoding", async () => {
    const plain = await get("/login");
    expect(plain.headers.get("content-encoding")).toBeNull();
    expect(plain.headers.get("vary")).toContain("accept-encoding");
    const html = await plain.text();
    expect(html).toContain("<title>Login | Tapscope</title>");
    const br = await get("/login", "gzip, deflate, br");
    expect(br.headers.get("content-encoding")).toBe("br");
    expect(br.headers.get("vary")).toContain("accept-encoding");
    expect(br.headers.get("content-security-policy")).toContain("script-src 'self' 'nonce-");
    const decoded = brotliDecompressSync(await body(br)).toString();
    // Each response has its own CSP nonce; the rest is the same page.
    const withoutNonce = (text: string) => text.replace(/nonce(=|-)"?[A-Za-z0-9+/=]+/g, "nonce");
    expect(withoutNonce(decoded)).toBe(withoutNonce(html));
    const gz = await get("/login", "gzip");
    expect(gz.headers.get("content-encoding")).toBe("gzip");
    expect(withoutNonce(gunzipSync(await body(gz)).toString())).toBe(withoutNonce(html));
  });

  test("redirects and the API are not compressed", async () => {
    const redirect = await get("/dashboard", "br");
    expect(redirect.status).toBe(302);
    expect(redirect.headers.get("content-encoding")).toBeNull();
    const api = await t.request("/api/health", { headers: { "accept-encoding": "br, gzip" } });
    expect(api.headers.get("content-encoding")).toBeNull();
  });

  test("a page preloads the scripts of its own area and of no other", async () => {
    const preloads = async (path: string) =>
      [...(await (await get(path)).text()).matchAll(/<link rel="modulepreload" href="([^"]+)"/g)].map((m) => m[1]);
    expect(await preloads("/")).toEqual(["/assets/site-area-s1.js", "/assets/chunk-shared.js"]);
    expect(await preloads("/login")).toEqual(["/assets/site-area-s1.js", "/assets/chunk-shared.js"]);
    expect(await preloads("/iframer")).toEqual(["/assets/frames-area-f1.js"]);
    expect(await preloads("/link/abc123")).toEqual(["/assets/frames-area-f1.js"]);
    expect(await preloads("/no-such-page")).toEqual([]);
  });
});
