import { beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Page } from "playwright-core";
import { makeCa, makeLeaf } from "../agent/tls-pki.ts";
import { namespaceTokenOf, type RunningServer, root, screenshot, signedInSuite } from "./harness.ts";

// TLS in the requests explorer, in Chromium at 1440 and 390 px: generated traffic (published through the real
// publisher) whose outbound calls are decrypted, not decrypted, or plaintext; filtered with the tls fields.

const bun = join(root, "node_modules/.bin/bun");
const DESKTOP = { width: 1440, height: 900 };
const PHONE = { width: 390, height: 844 };
let server: RunningServer;
let page: Page;
let pageErrors: string[];
let requestsPath = "";
let token = "";
const endMs = Math.ceil(Date.now() / 60_000) * 60_000;

const rows = () => page.locator("[role=row][data-event-id]");
const settled = () => page.waitForFunction(() => !document.querySelector("[data-testid=results]")?.textContent?.includes("Loading…"));

/**
 * Applies a filter and waits until the list shows its answer: rows, each holding `everyRowHas` if given (the chip appears
 * before the query starts, so "not loading" alone can still be the previous filter's list on a busy machine).
 */
async function applyFilter(text: string, everyRowHas?: string) {
  const input = page.getByRole("textbox", { name: "Filter" });
  await input.fill(text);
  await input.press("Enter");
  await page.getByRole("button", { name: text, exact: true }).waitFor();
  await settled();
  if (everyRowHas === undefined) return;
  await page.waitForFunction((needle) => {
    const found = [...document.querySelectorAll("[role=row][data-event-id]")];
    return found.length > 0 && found.every((row) => row.innerHTML.includes(needle));
  }, everyRowHas);
}

const suite = signedInSuite({ timeoutMs: 15_000 });

beforeAll(() => {
  ({ server, page, pageErrors } = suite);
});

describe("TLS in the requests explorer", () => {
  test("generated calls arrive through the publisher", async () => {
    requestsPath = (await suite.signIn("tls@example.test")).replace(/\/live$/, "/requests");
    token = await namespaceTokenOf(page);
    const child = Bun.spawn(
      [
        bun,
        join(root, "bench/store/publish-child.ts"),
        server.baseUrl,
        token,
        "600",
        String((endMs - 50 * 60_000) * 1000),
        String((endMs - 60_000) * 1000),
        "7",
      ],
      { cwd: root, stdout: "pipe", stderr: "pipe" },
    );
    expect(await child.exited).toBe(0);
  }, 60_000);

  test("decrypted calls: a lock and https in the list, the TLS section and handshake step in the detail", async () => {
    await page.setViewportSize(DESKTOP);
    await page.goto(`${server.baseUrl}${requestsPath}`);
    for (const deadline = Date.now() + 15_000; ; ) {
      await page.getByTestId("result-count").waitFor();
      await settled();
      if ((await rows().count()) > 0) break;
      if (Date.now() > deadline) throw new Error("the explorer shows no rows");
      await page.waitForTimeout(500);
      await page.reload();
    }
    await applyFilter('tls == "decrypted"', 'aria-label="TLS, decrypted"');
    const count = await rows().count();
    expect(count).toBeGreaterThan(0);
    expect(await rows().locator('[role=img][aria-label="TLS, decrypted"]').count()).toBe(count);
    for (const url of await rows().locator("[role=cell]:nth-child(4)").allTextContents())
      expect(url).toStartWith("https://api.stripe.com/");
    await screenshot(page, "tls-1440-decrypted-list");

    await rows().first().click();
    const detail = page.getByRole("region", { name: "Request detail" });
    await detail.waitFor();
    expect(await detail.getByTestId("detail-url").textContent()).toStartWith("https://api.stripe.com/");
    const tls = detail.getByRole("table", { name: "TLS" });
    expect(await tls.textContent()).toContain("api.stripe.com");
    expect(await tls.textContent()).toMatch(/protocol \(ALPN\)(h2|http\/1\.1)/);
    expect(await tls.textContent()).toContain("capturedecrypted");
    expect(await detail.getByRole("list", { name: "Timing" }).textContent()).toContain("TLS handshake");
    await screenshot(page, "tls-1440-decrypted-detail");

    await page.setViewportSize(PHONE);
    await page.waitForTimeout(300);
    await screenshot(page, "tls-390-decrypted-detail");
    await detail.getByRole("button", { name: "Close detail" }).click();
    await screenshot(page, "tls-390-decrypted-list");
    expect(await rows().first().locator('[role=img][aria-label="TLS, decrypted"]').isVisible()).toBe(true);
    // On a phone the filters are folded behind one bar.
    await page.getByRole("button", { name: "Filters and chart" }).click();
    await page.getByRole("button", { name: 'Remove filter tls == "decrypted"' }).click();
    expect(pageErrors).toEqual([]);
  }, 60_000);

  test("calls not decrypted: the marker in the list and the reason in the detail", async () => {
    await page.setViewportSize(DESKTOP);
    await applyFilter('tls == "not decrypted" && tls.reason contains "certificate"', "not decrypted");
    const count = await rows().count();
    expect(count).toBeGreaterThan(0);
    expect(await rows().getByText("not decrypted", { exact: true }).count()).toBe(count);
    expect(await rows().locator('[role=img][aria-label="TLS, decrypted"]').count()).toBe(0);
    for (const url of await rows().locator("[role=cell]:nth-child(4)").allTextContents()) {
      expect(url).toBe("not decryptedapi.stripe.com (34.1.2.3:443, tcp)");
    }
    await screenshot(page, "tls-1440-not-decrypted-list");
    await rows().first().click();
    const detail = page.getByRole("region", { name: "Request detail" });
    await detail.waitFor();
    expect(await detail.getByTestId("detail-url").textContent()).toBe("api.stripe.com (34.1.2.3:443, tcp)");
    const tls = await detail.getByRole("table", { name: "TLS" }).textContent();
    expect(tls).toContain("not decrypted: upstream certificate not trusted");
    expect(tls).toContain("unable to get local issuer certificate");
    await screenshot(page, "tls-1440-not-decrypted-detail");
    await page.setViewportSize(PHONE);
    await page.waitForTimeout(300);
    await screenshot(page, "tls-390-not-decrypted-detail");
    expect(pageErrors).toEqual([]);
  }, 60_000);

  test("a call through a forward proxy (traced curl -x): the CONNECT with its authority once, the tunnel's calls under it", async () => {
    // A real run: curl through a local CONNECT proxy to a local HTTPS server, traced and published with the token.
    const dir = mkdtempSync(join(tmpdir(), "tapscope-e2e-proxy-"));
    makeCa(dir, "ca");
    const leaf = makeLeaf(dir, "ca", "leaf", ["DNS:localhost", "IP:127.0.0.1"]);
    const https = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      tls: leaf,
      fetch: (req) => new Response(`hello ${new URL(req.url).pathname}\n`),
    });
    const proxy = net.createServer((client) =>
      client.once("data", (head) => {
        const port = Number(head.toString("latin1").split(" ")[1]!.split(":")[1]);
        const upstream = net.connect(port, "127.0.0.1", () => {
          client.write("HTTP/1.1 200 Connection established\r\n\r\n");
          client.pipe(upstream);
          upstream.pipe(client);
        });
        upstream.on("error", () => client.destroy());
      }),
    );
    await new Promise<void>((done) => proxy.listen(0, "127.0.0.1", done));
    const proxyPort = (proxy.address() as net.AddressInfo).port;
    try {
      const url = `https://localhost:${https.port}`;
      const run = Bun.spawn(
        [bun, join(root, "src/main.ts"), "run", "--", "curl", "-sS", "-x", `http://127.0.0.1:${proxyPort}`, `${url}/a`, `${url}/b`],
        {
          env: {
            ...process.env,
            TAPSCOPE_TOKEN: token,
            TAPSCOPE_ENDPOINT: server.baseUrl,
            CURL_CA_BUNDLE: join(dir, "ca.crt"),
            NO_PROXY: "",
          },
          stdout: "pipe",
          stderr: "pipe",
        },
      );
      expect(await run.exited).toBe(0);
      expect(await new Response(run.stdout).text()).toBe("hello /a\nhello /b\n");
    } finally {
      https.stop(true);
      proxy.close();
      rmSync(dir, { recursive: true, force: true });
    }

    await page.setViewportSize(DESKTOP);
    await page.goto(`${server.baseUrl}${requestsPath}`);
    await page.getByTestId("result-count").waitFor();
    await applyFilter('request.method == "CONNECT"');
    for (const deadline = Date.now() + 15_000; (await rows().count()) === 0; ) {
      if (Date.now() > deadline) throw new Error("the CONNECT did not arrive");
      await page.waitForTimeout(500);
      await page.reload();
      await settled();
    }
    const url = (await rows().first().locator("[role=cell]:nth-child(4)").textContent()) ?? "";
    expect(url).toMatch(/^localhost:\d+$/);
    await screenshot(page, "tls-1440-connect-list");
    await rows().first().click();
    const detail = page.getByRole("region", { name: "Request detail" });
    await detail.waitFor();
    expect(await detail.getByTestId("detail-url").textContent()).toBe(url);
    const calls = detail.getByRole("list", { name: "Calls through this tunnel" });
    await calls.waitFor();
    const text = await calls.textContent();
    expect(text).toContain(`https://${url}/a`);
    expect(text).toContain(`https://${url}/b`);
    await screenshot(page, "tls-1440-connect-detail");
    await page.setViewportSize(PHONE);
    await page.waitForTimeout(300);
    await screenshot(page, "tls-390-connect-detail");
    expect(pageErrors).toEqual([]);
  }, 90_000);
});
