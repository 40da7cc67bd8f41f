import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Page } from "playwright-core";
import { startSmtpServer } from "../support/smtp.ts";
import { startStripeStandin, WEBHOOK_SECRET } from "../support/stripe-standin.ts";
import {
  launchBrowser,
  type RunningBrowser,
  type RunningServer,
  screenshot,
  signInByEmail,
  startServer,
  watchPageErrors,
} from "./harness.ts";

// Billing as a person goes through it, against the real server and the local Stripe stand-in: Upgrade, the checkout
// page, 'Subscribed!' once the webhook arrived, then Cancel? and the banner.
let smtp: Awaited<ReturnType<typeof startSmtpServer>>;
let stripe: ReturnType<typeof startStripeStandin>;
let server: RunningServer;
let browser: RunningBrowser;
let page: Page;
let pageErrors: string[];

beforeAll(async () => {
  smtp = await startSmtpServer();
  stripe = startStripeStandin((payload, signature) =>
    fetch(`${server.baseUrl}/api/StripeWebhook`, {
      method: "POST",
      headers: { "content-type": "application/json", "stripe-signature": signature },
      body: payload,
    }),
  );
  server = await startServer({
    SMTP_URL: smtp.url,
    STRIPE_SECRET_KEY: "sk_test_standin",
    STRIPE_WEBHOOK_SECRET: WEBHOOK_SECRET,
    STRIPE_PRICE_TEAM: "price_team_test",
    STRIPE_PRICE_SCALE: "price_scale_test",
    STRIPE_API_URL: stripe.url,
  });
  browser = await launchBrowser();
  page = await browser.context.newPage();
  pageErrors = watchPageErrors(page);
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await server?.stop();
  stripe?.stop();
  await smtp?.close();
});

describe("billing with Stripe", () => {
  for (const viewport of [
    { width: 1440, height: 900 },
    { width: 390, height: 844 },
  ]) {
    test(`${viewport.width} px: Upgrade to Team, pay on the checkout page, 'Subscribed!'; cancel, the banner`, async () => {
      await page.setViewportSize(viewport);
      await signInByEmail(page, server.baseUrl, smtp, `billing-${viewport.width}@example.test`);
      await page.goto(`${server.baseUrl}/dashboard/billing`);
      await page.getByRole("region", { name: "Free" }).getByText("ACTIVE").waitFor();
      await screenshot(page, `billing-plans-${viewport.width}`);
      await page.getByRole("region", { name: "Team" }).getByRole("link", { name: "Upgrade" }).click();
      await page.getByRole("heading", { name: "Test checkout (local stand-in for Stripe)" }).waitFor();
      expect(await page.getByText("$25.00 per month, 14-day trial").isVisible()).toBe(true);
      await page.getByRole("button", { name: "Pay" }).click();
      await page.waitForURL(/\/dashboard\/billing/);
      const subscribed = page.getByRole("region", { name: "Subscription" });
      await subscribed.getByText("Subscribed!").waitFor();
      expect(await subscribed.textContent()).toContain("Team");
      expect(await subscribed.textContent()).toContain("$25.00 per month");
      expect(await subscribed.textContent()).toMatch(/sub_standin_\d+/);
      await screenshot(page, `billing-subscribed-${viewport.width}`);
      await page.getByRole("button", { name: "Cancel?" }).click();
      await page.getByRole("button", { name: "Cancel subscription" }).click();
      await page.getByText("Your plan was cancelled.").waitFor();
      expect(await page.getByText("waiting for Stripe").count()).toBe(0);
      await page.getByRole("region", { name: "Free" }).getByText("ACTIVE").waitFor();
      await screenshot(page, `billing-cancelled-${viewport.width}`);
      await page.getByRole("button", { name: "Dismiss" }).click();
      expect(await page.getByText("Your plan was cancelled.").count()).toBe(0);
      expect(pageErrors).toEqual([]);
      await page.context().clearCookies();
    }, 60_000);
  }
});
