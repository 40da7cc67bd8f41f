import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startTestApp, type TestApp } from "../support/app.ts";
import { startStripeStandin, WEBHOOK_SECRET } from "../support/stripe-standin.ts";

// Billing against the local Stripe stand-in (tests/support/stripe-standin.ts): checkout, webhooks, cancel.
let t: TestApp;
let off: TestApp;
let stripe: ReturnType<typeof startStripeStandin>;

beforeAll(async () => {
  stripe = startStripeStandin((payload, signature) =>
    t
      .request("/api/StripeWebhook", {
        method: "POST",
        headers: { "content-type": "application/json", "stripe-signature": signature },
        body: payload,
      })
      .then((answer) => answer.res),
  );
  t = await startTestApp({
    backend: "pglite",
    env: {
      STRIPE_SECRET_KEY: "sk_test_standin",
      STRIPE_WEBHOOK_SECRET: WEBHOOK_SECRET,
      STRIPE_PRICE_TEAM: "price_team_test",
      STRIPE_PRICE_SCALE: "price_scale_test",
      STRIPE_API_URL: stripe.url,
    },
  });
  off = await startTestApp({ backend: "pglite" });
}, 60_000);
afterAll(async () => {
  await t?.close();
  await off?.close();
  stripe?.stop();
});

const checkout = (cookie: string, orgId: string, tier: string) =>
  t.request(`/api/StripeRedirect?org_id=${orgId}&tier_name=${tier}`, { headers: { cookie } });
const sessionIdOf = (location: string) => /\/pay\/(\w+)$/.exec(location)?.[1] ?? "";

describe("billing", () => {
  test("self-hosted default: billing off, no plan, no limits; checkout says billing is not enabled", async () => {
    const u = await off.onboardedUser();
    const status = await off.call("/api/GetBillingStatus", { orgId: u.orgId }, { cookie: u.cookie });
    expect(status.body).toEqual({ billingEnabled: false, plan: null, isTrial: false, limits: null });
    const redirect = await off.request(`/api/StripeRedirect?org_id=${u.orgId}&tier_name=team-20250212`, { headers: { cookie: u.cookie } });
    expect(redirect.status).toBe(302);
    expect(decodeURIComponent(redirect.headers.get("location") ?? "")).toBe(
      "/dashboard/billing?error=billing is not enabled on this server",
    );
  });

  test("upgrade: checkout with a 14-day trial for a first subscription, the webhook records it, GetSubscription shows it", async () => {
    const u = await t.onboardedUser();
    expect((await t.call("/api/GetBillingStatus", { orgId: u.orgId }, { cookie: u.cookie })).body).toMatchObject({
      billingEnabled: true,
      plan: "free",
      limits: { users: 1, containers: 3, retentionDays: 3 },
    });
    const redirect = await checkout(u.cookie, u.orgId, "team-20250212");
    expect(redirect.status).toBe(302);
    const location = redirect.headers.get("location") ?? "";
    expect(location).toStartWith(`${stripe.url}/pay/`);
    const session = stripe.sessions.get(sessionIdOf(location))!;
    expect([session.mode, session.price, session.trialDays, session.client_reference_id, session.customer_email]).toEqual([
      "subscription",
      "price_team_test",
      14,
      u.orgId,
      u.email,
    ]);
    expect(session.success_url).toBe("http://tapscope.test/dashboard/billing?checkout=success");
    await stripe.complete(session.id);
    expect(stripe.delivered.slice(-2).map((d) => [d.type, d.status])).toEqual([
      ["customer.subscription.created", 200],
      ["checkout.session.completed", 200],
    ]);
    const sub = await t.call("/api/GetSubscription", { orgId: u.orgId }, { cookie: u.cookie });
    expect(sub.body.error).toBe("");
    expect(sub.body.activeSubscription).toMatchObject({
      tier: "team-20250212",
      planName: "Team",
      status: "trialing",
      amountCents: 2500,
      currency: "usd",
    });
    // In the trial the plan applies with no limits.
    expect((await t.call("/api/GetBillingStatus", { orgId: u.orgId }, { cookie: u.cookie })).body).toMatchObject({
      plan: "team",
      isTrial: true,
      limits: null,
    });
    // A second checkout while subscribed is refused with the reason.
    const again = await checkout(u.cookie, u.orgId, "scale-20250212");
    expect(decodeURIComponent(again.headers.get("location") ?? "")).toContain("already has a subscription");
  });

  test("cancel: at Stripe, then the row and the deleted webhook agree; the next checkout has no trial", async () => {
    const u = await t.onboardedUser();
    await stripe.complete(sessionIdOf((await checkout(u.cookie, u.orgId, "scale-20250212")).headers.get("location") ?? ""));
    const { activeSubscription } = (await t.call("/api/GetSubscription", { orgId: u.orgId }, { cookie: u.cookie })).body;
    const outsider = await t.onboardedUser();
    const refused = await t.call(
      "/api/CancelSubscription",
      { stripeSubscriptionId: activeSubscription.stripeSubscriptionId },
      { cookie: outsider.cookie },
    );
    expect(refused.status).toBe(404);
    const cancelled = await t.call(
      "/api/CancelSubscription",
      { stripeSubscriptionId: activeSubscription.stripeSubscriptionId },
      { cookie: u.cookie },
    );
    expect(cancelled.status).toBe(200);
    expect(stripe.subscriptions.get(activeSubscription.stripeSubscriptionId)?.status).toBe("canceled");
    expect(stripe.delivered.at(-1)).toMatchObject({ type: "customer.subscription.deleted", status: 200 });
    expect((await t.call("/api/GetSubscription", { orgId: u.orgId }, { cookie: u.cookie })).body).toEqual({
      activeSubscription: null,
      error: "",
    });
    const next = stripe.sessions.get(sessionIdOf((await checkout(u.cookie, u.orgId, "team-20250212")).headers.get("location") ?? ""))!;
    expect(next.trialDays).toBe(0);
  });

  test("an unknown tier and a signed-out visitor are refused with a clear answer", async () => {
    const u = await t.onboardedUser();
    const unknown = await checkout(u.cookie, u.orgId, "gold-2099");
    expect(decodeURIComponent(unknown.headers.get("location") ?? "")).toBe(
      '/dashboard/billing?error=unknown tier name "gold-2099": use team-20250212 or scale-20250212',
    );
    const anonymous = await t.request(`/api/StripeRedirect?org_id=${u.orgId}&tier_name=team-20250212`);
    expect(anonymous.headers.get("location")).toBe("/login?next=%2Fdashboard%2Fbilling");
  });

  test("webhooks: a bad signature and a stale timestamp are refused; a replayed event and an older one change nothing", async () => {
    const u = await t.onboardedUser();
    const sub = await stripe.complete(sessionIdOf((await checkout(u.cookie, u.orgId, "team-20250212")).headers.get("location") ?? ""));
    const forged = await t.request("/api/StripeWebhook", {
      method: "POST",
      headers: { "stripe-signature": "t=1,v1=deadbeef" },
      body: JSON.stringify({ id: "evt_forged", type: "customer.subscription.deleted", data: { object: sub } }),
    });
    expect(forged.status).toBe(400);
    expect(forged.body.error).toContain("webhook signature rejected");
    const stale = await stripe.send(
      "customer.subscription.deleted",
      { ...sub, status: "canceled" },
      { timestamp: Math.floor(Date.now() / 1000) - 3600 },
    );
    expect(stale.status).toBe(400);
    const status = async () =>
      (await t.call("/api/GetSubscription", { orgId: u.orgId }, { cookie: u.cookie })).body.activeSubscription?.status;
    expect(await status()).toBe("trialing");
    // Newer: active. Then the same event again, and an older one saying past_due: nothing changes.
    const active = await stripe.send(
      "customer.subscription.updated",
      { ...sub, status: "active" },
      { created: Math.floor(Date.now() / 1000) + 10 },
    );
    expect(await status()).toBe("active");
    const replay = await stripe.send("customer.subscription.updated", { ...sub, status: "active" }, { id: active.event.id });
    expect([replay.status, await status()]).toEqual([200, "active"]);
    await stripe.send("customer.subscription.updated", { ...sub, status: "past_due" }, { created: Math.floor(Date.now() / 1000) - 100 });
    expect(await status()).toBe("active");
  });
});
