import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Page } from "playwright-core";
import { startSmtpServer } from "../support/smtp.ts";
import {
  hasHorizontalScroll,
  launchBrowser,
  type RunningBrowser,
  type RunningServer,
  screenshot,
  signInByEmail,
  startServer,
  watchPageErrors,
} from "./harness.ts";
import { isSelfPublishing, type RunningProgram, startProgram, startUpstream } from "./live-harness.ts";

// A new user's content search in Chromium: a program under `tapscope run` is called with a JSON body, a request id
// header and a gzip JSON response; the Requests screen finds each by what it carried (the search box, the filter
// input and its autocomplete), opens it and sees the match marked, on a desktop and on a phone.

let smtp: Awaited<ReturnType<typeof startSmtpServer>>;
let server: RunningServer;
let browser: RunningBrowser;
let program: RunningProgram | undefined;
let page: Page;
let pageErrors: string[];
const upstream = startUpstream();
let requestsUrl = "";

const rows = () => page.locator("[role=row][data-event-id]");
const detail = () => page.getByRole("region", { name: "Request detail" });

async function settled() {
  await page.waitForFunction(() => {
    const results = document.querySelector("[data-testid=results]");
    return results && !results.textContent?.includes("Loading…") && document.querySelector("[data-testid=result-count]");
  });
}

async function resultCount(): Promise<number> {
  await settled();
  return Number(((await page.getByTestId("result-count").textContent()) ?? "").replace(/[^\d]/g, ""));
}

/** The last hour, no filters, until the program's calls are stored. */
async function openRequests() {
  await page.goto(requestsUrl);
  const deadline = Date.now() + 20_000;
  while ((await resultCount()) < 4) {
    if (Date.now() > deadline) throw new Error(`only ${await resultCount()} requests stored`);
    await Bun.sleep(500);
    await page.reload();
  }
  // On a phone the filters are folded behind one bar: open it, as a person would.
  const unfold = page.getByRole("button", { name: "Filters and chart" });
  if (await unfold.isVisible()) await unfold.click();
}

async function openOnlyRow(path: string) {
  await page.waitForFunction(() => document.querySelector("[data-testid=result-count]")?.textContent === "1 request");
  expect(await rows().count()).toBe(1);
  expect(await rows().first().textContent()).toContain(path);
  await rows().first().click();
  await detail().waitFor();
}

beforeAll(async () => {
  smtp = await startSmtpServer();
  server = await startServer({ SMTP_URL: smtp.url });
  browser = await launchBrowser();
  page = await browser.context.newPage();
  page.setDefaultTimeout(15_000);
  pageErrors = watchPageErrors(page);
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await program?.stop();
  await server?.stop();
  await smtp?.close();
  upstream.stop();
});

describe("search by content", () => {
  test("a program's calls carry a body, a header and a gzip body", async () => {
    requestsUrl = `${server.baseUrl}${(await signInByEmail(page, server.baseUrl, smtp, "grace@example.test")).replace(/\/live$/, "/requests")}`;
    const token = await page.evaluate(async () => {
      const post = async (name: string, body: unknown) =>
        (
          await fetch(`/api/${name}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) })
        ).json();
      const { orgs } = await post("ListOrgs", {});
      const { namespaces } = await post("ListNamespaces", { orgId: orgs[0].orgId });
      return (await post("GenerateNamespaceToken", { namespaceId: namespaces[0].namespaceId })).token as string;
    });
    program = await startProgram(server.baseUrl, { token, upstreamUrl: upstream.url });
    const base = `http://127.0.0.1:${program.port}`;
    await fetch(`${base}/echo`, { method: "POST", headers: { "content-type": "application/json" }, body: '{"order":"zebra-7781"}' });
    await fetch(`${base}/hello?q=traced`, { headers: { "x-request-id": "rid-5521" } });
    await fetch(`${base}/hello?api_token=tok-9931-secret`, { headers: { authorization: "Bearer sk-9931-secret" } });
    expect(await (await fetch(`${base}/gzip`)).json()).toEqual({ error: { code: "E1042", message: "quota exceeded" } });
  }, 60_000);

  for (const viewport of [
    { name: "desktop", width: 1440, height: 900 },
    { name: "phone", width: 390, height: 844 },
  ]) {
    test(`${viewport.name} (${viewport.width} px): a body, a header and a gzip body are found and marked`, async () => {
      await page.setViewportSize({ width: viewport.width, height: viewport.height });
      await openRequests();
      const search = page.getByRole("searchbox", { name: "Search headers and bodies" });

      // A body, by the search box.
      await search.fill("ZEBRA-7781");
      await search.press("Enter");
      await openOnlyRow("/echo");
      const marks = detail().getByLabel("Request body").locator("mark");
      expect(await marks.allTextContents()).toEqual(["zebra-7781"]);
      expect(await hasHorizontalScroll(page)).toBe(false);
      await screenshot(page, `search-${viewport.name}-1-body`);

      // A header, by the filter input with its autocomplete.
      await openRequests();
      const input = page.getByRole("textbox", { name: "Filter" });
      await input.click();
      await input.pressSequentially("request.hea");
      await page
        .getByRole("list", { name: "Completions" })
        .getByRole("button", { name: /^request\.headers/ })
        .click();
      await input.pressSequentially('["x-req');
      await input.press("Tab");
      expect(await input.inputValue()).toBe('request.headers["x-request-id"] ');
      await screenshot(page, `search-${viewport.name}-2-autocomplete`);
      await input.pressSequentially('== "rid-5521"');
      await input.press("Enter");
      await openOnlyRow("/hello");
      const headerMarks = detail().getByRole("table", { name: "Request headers" }).locator("mark");
      expect(await headerMarks.allTextContents()).toEqual(["rid-5521"]);
      await screenshot(page, `search-${viewport.name}-3-header`);

      // A gzip body: searched as the JSON it holds.
      await openRequests();
      await search.fill("e1042");
      await search.press("Enter");
      await openOnlyRow("/gzip");
      if (!isSelfPublishing) {
        // The capture engine decoded it: the detail shows the text, marked.
        expect(await detail().getByLabel("Response body").locator("mark").allTextContents()).toEqual(["E1042"]);
      }
      await screenshot(page, `search-${viewport.name}-4-gzip`);

      // A search too long to run says why and searches nothing.
      await search.fill("x".repeat(1100));
      await search.press("Enter");
      expect(await page.getByRole("alert").first().textContent()).toContain("at most 1,024 characters");
      expect(pageErrors).toEqual([]);
    }, 90_000);
  }

  test.skipIf(isSelfPublishing)(
    "redacted values were never stored, so they are never found",
    async () => {
      await page.setViewportSize({ width: 1440, height: 900 });
      for (const secret of ["sk-9931-secret", "tok-9931-secret"]) {
        await openRequests();
        const search = page.getByRole("searchbox", { name: "Search headers and bodies" });
        await search.fill(secret);
        await search.press("Enter");
        await page.waitForFunction(() => document.querySelector("[data-testid=result-count]")?.textContent === "0 requests");
      }
      // The header itself is there, its value redacted.
      await openRequests();
      const input = page.getByRole("textbox", { name: "Filter" });
      await input.fill('request.headers["authorization"] == "Bearer [redacted]"');
      await input.press("Enter");
      await openOnlyRow("/hello?api_token=");
    },
    60_000,
  );
});
