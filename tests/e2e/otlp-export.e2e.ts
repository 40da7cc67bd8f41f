import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Page } from "playwright-core";
import { type OtlpReceiver, startOtlpReceiver } from "../support/otlp-receiver.ts";
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

// The namespace's OpenTelemetry export as an admin sets it up: the endpoint and a key, saved (the key never shown
// again), a test span the local collector stand-in answers, its refusal in words; at a desktop's width and a phone's.
let smtp: Awaited<ReturnType<typeof startSmtpServer>>;
let server: RunningServer;
let browser: RunningBrowser;
let receiver: OtlpReceiver;
let page: Page;
let pageErrors: string[];
let exportPath = "";

beforeAll(async () => {
  smtp = await startSmtpServer();
  receiver = await startOtlpReceiver();
  server = await startServer({ SMTP_URL: smtp.url });
  browser = await launchBrowser();
  page = await browser.context.newPage();
  page.setDefaultTimeout(20_000);
  pageErrors = watchPageErrors(page);
  const live = await signInByEmail(page, server.baseUrl, smtp, "otel-admin@example.test");
  exportPath = live.replace(/\/live$/, "/export");
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await server?.stop();
  await smtp?.close();
  receiver?.stop();
});

async function bothWidths(name: string): Promise<void> {
  await page.setViewportSize({ width: 1440, height: 900 });
  await screenshot(page, `otlp-${name}-1440`);
  await page.setViewportSize({ width: 390, height: 844 });
  await screenshot(page, `otlp-${name}-390`);
  expect(await hasHorizontalScroll(page), name).toBe(false);
  await page.setViewportSize({ width: 1440, height: 900 });
}

describe("the OpenTelemetry export screen, in Chromium", () => {
  test("an admin saves a collector with a key, sends a test span, and sees what the collector answered", async () => {
    await page.goto(`${server.baseUrl}${exportPath}`);
    await page.getByRole("heading", { name: "OpenTelemetry export" }).waitFor();
    await page.getByText("nowhere: export is off").waitFor();
    expect(await page.getByRole("button", { name: "Send a test span" }).isDisabled()).toBe(true);
    await bothWidths("empty");

    await page.getByLabel("Endpoint").fill(receiver.base);
    await page.getByLabel("Headers, one per line").fill("x-api-key: browser-secret-1");
    await page.getByRole("button", { name: "Save" }).click();
    await page.getByText("Saved. New requests use these settings.").waitFor();
    await page.getByRole("list", { name: "Stored headers" }).getByText("x-api-key").waitFor();
    expect(await page.content()).not.toContain("browser-secret-1");

    await page.getByRole("button", { name: "Send a test span" }).click();
    await page.getByText(/The collector answered 200: accepted/).waitFor();
    expect(receiver.requests.at(-1)!.headers.get("x-api-key")).toBe("browser-secret-1");
    expect(receiver.requests.at(-1)!.spans[0]!.name).toBe("tapscope test span");
    await bothWidths("saved");

    receiver.answerNext({ status: 403, body: "key revoked", contentType: "text/plain" });
    await page.getByRole("button", { name: "Send a test span" }).click();
    await page.getByText("The collector answered 403: key revoked").waitFor();

    // After a reload the key is still not in the page, and the form says it is stored.
    await page.reload();
    await page.getByRole("list", { name: "Stored headers" }).waitFor();
    expect(await page.content()).not.toContain("browser-secret-1");
    expect(await page.getByLabel("Endpoint").inputValue()).toBe(receiver.base);
  }, 120_000);

  test("a bad endpoint is refused with the reason; the stored settings stay", async () => {
    await page.getByLabel("Endpoint").fill("https://key:secret@collector.example");
    await page.getByRole("button", { name: "Save" }).click();
    await page.getByRole("alert").getByText("put credentials in a header, not in the endpoint URL").waitFor();
    await bothWidths("refused");
    await page.reload();
    expect(await page.getByLabel("Endpoint").inputValue()).toBe(receiver.base);
    expect(pageErrors).toEqual([]);
  }, 60_000);
});
