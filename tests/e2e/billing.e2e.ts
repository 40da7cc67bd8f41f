import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startStripeStandin, WEBHOOK_SECRET } from "../support/stripe-standin.ts";
import { screenshot, signedInSuite } from "./harness.ts";

// Billing as a person goes through it, against the real server and the local Stripe stand-in: Upgrade, the checkout
// page, 'Subscribed!' once the webhook arrived, a failed payment and Manage billing (Stripe's customer portal), then
// Cancel? and the banner.
let stripe: ReturnType<typeof startStripeStandin>;

beforeAll(() => {
  stripe = startStripeStandin((payload, signature) =>
    fetch(`${suite.server.baseUrl}/api/StripeWebhook`, {
      method: "POST",
      headers: { "content-type": "application/json", "stripe-signature": signature },
      body: payload,
    }),
  );
});
const suite = signedInSuite({
  env: () => ({
    STRIPE_SECRET_KEY: "sk_test_standin",
    STRIPE_WEBHOOK_SECRET: WEBHOOK_SECRET,
    STRIPE_PRICE_TEAM: "price_team_test",
    STRIPE_PRICE_SCALE: "price_scale_test",
    STRIPE_API_URL: stripe.url,
  }),
});
afterAll(() => {
  stripe?.stop();
});

describe("billing with Stripe", () => {
  for (const viewport of [
    { width: 1440, height: 900 },
    { width: 390, height: 844 },
  ]) {
    test(`${viewport.width} px: Upgrade to Team, pay on the checkout page, 'Subscribed!'; cancel, the banner`, async () => {
      await suite.page.setViewportSize(viewport);
      await suite.signIn(`billing-${viewport.width}@example.test`);
      await suite.page.goto(`${suite.server.baseUrl}/dashboard/billing`);
      await suite.page.getByRole("region", { name: "Free" }).getByText("ACTIVE").waitFor();
      await screenshot(suite.page, `billing-plans-${viewport.width}`);
      await suite.page.getByRole("region", { name: "Team" }).getByRole("link", { name: "Upgrade" }).click();
      await suite.page.getByRole("heading", { name: "Test checkout (local stand-in for Stripe)" }).waitFor();
      expect(await suite.page.getByText("$25.00 per month, 14-day trial").isVisible()).toBe(true);
      await suite.page.getByRole("button", { name: "Pay" }).click();
      await suite.page.waitForURL(/\/dashboard\/billing/);
      const subscribed = suite.page.getByRole("region", { name: "Subscription" });
      await subscribed.getByText("Subscribed!").waitFor();
      expect(await subscribed.textContent()).toContain("Team");
      expect(await subscribed.textContent()).toContain("$25.00 per month");
      expect(await subscribed.textContent()).toMatch(/sub_standin_\d+/);
      await screenshot(suite.page, `billing-subscribed-${viewport.width}`);

      // A renewal's payment fails (after the trial): the screen says so, and Manage billing opens Stripe's portal.
      const subscriptionId = /sub_standin_\d+/.exec((await subscribed.textContent()) ?? "")?.[0] ?? "";
      Object.assign(stripe.subscriptions.get(subscriptionId)!, { status: "active", trial_end: null });
      await stripe.failPayment(subscriptionId, { created: Math.floor(Date.now() / 1000) + 10 });
      await suite.page.reload();
      await subscribed.getByText("The last payment failed: Stripe will retry it. Update the card with Manage billing.").waitFor();
      await screenshot(suite.page, `billing-past-due-${viewport.width}`);
      await subscribed.getByRole("button", { name: "Manage billing" }).click();
      await suite.page.getByRole("heading", { name: "Test billing portal (local stand-in for Stripe)" }).waitFor();
      expect(await suite.page.getByText(/in_standin_\d+: 25\.00 USD, open/).isVisible()).toBe(true);
      await suite.page.getByRole("link", { name: "Return to Tapscope" }).click();
      await suite.page.waitForURL(/\/dashboard\/billing$/);
      await subscribed.getByText("Subscribed!").waitFor();

      await suite.page.getByRole("button", { name: "Cancel?" }).click();
      await suite.page.getByRole("button", { name: "Cancel subscription" }).click();
      await suite.page.getByText("Your plan was cancelled.").waitFor();
      expect(await suite.page.getByText("waiting for Stripe").count()).toBe(0);
      await suite.page.getByRole("region", { name: "Free" }).getByText("ACTIVE").waitFor();
      await screenshot(suite.page, `billing-cancelled-${viewport.width}`);
      await suite.page.getByRole("button", { name: "Dismiss" }).click();
      expect(await suite.page.getByText("Your plan was cancelled.").count()).toBe(0);
      expect(suite.pageErrors).toEqual([]);
      await suite.page.context().clearCookies();
    }, 60_000);
  }
});
