import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startTestApp, type TestApp } from "../../support/app.ts";
import { startSmtpServer } from "../../support/smtp.ts";
import { startStripeStandin, WEBHOOK_SECRET } from "../../support/stripe-standin.ts";

// Billing against the local Stripe stand-in (tests/support/stripe-standin.ts): checkout, webhooks, cancel.
let t: TestApp;
let off: TestApp;
let stripe: ReturnType<typeof startStripeStandin>;
let smtp: Awaited<ReturnType<typeof startSmtpServer>>;

beforeAll(async () => {
  smtp = await startSmtpServer();
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
      SMTP_URL: smtp.url,
    },
  });
  off = await startTestApp({ backend: "pglite" });
}, 60_000);
afterAll(async () => {
  await t?.close();
  await off?.close();
  stripe?.stop();
  await smtp?.close();
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
    // The org's plan (what the retention job reads) follows the subscription.
    const { orgs } = await import("#db/schema/index.ts");
    const { eq } = await import("drizzle-orm");
    const planOf = async (orgId: string) => (await t.db.select({ plan: orgs.plan }).from(orgs).where(eq(orgs.id, orgId)))[0]?.plan;
    expect(await planOf(u.orgId)).toBe("team");
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

  test("only an org admin may start a checkout: a member (read access) is sent back with the reason", async () => {
    const admin = await t.onboardedUser();
    await stripe.complete(sessionIdOf((await checkout(admin.cookie, admin.orgId, "team-20250212")).headers.get("location") ?? ""));
    const member = await t.user();
    await t.addMember(admin, member);
    const refused = await checkout(member.cookie, admin.orgId, "scale-20250212");
    expect(decodeURIComponent(refused.headers.get("location") ?? "")).toBe(
      "/dashboard/billing?error=forbidden: only an org admin can change the plan",
    );
    const cancel = await t.call(
      "/api/CancelSubscription",
      {
        stripeSubscriptionId: (await t.call("/api/GetSubscription", { orgId: admin.orgId }, { cookie: admin.cookie })).body
          .activeSubscription.stripeSubscriptionId,
      },
      { cookie: member.cookie },
    );
    expect([cancel.status, cancel.body.error]).toEqual([403, "forbidden: only an org admin can cancel the plan"]);
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

  test("limits: Free allows one user; Team three (a fourth refused with what to do); a trial has none", async () => {
    const u = await t.onboardedUser();
    const add = (email: string) => t.call("/api/AddUser", { namespaceId: u.namespaceId, email }, { cookie: u.cookie });
    const refused = await add("second@example.com");
    expect(refused.status).toBe(403);
    expect(refused.body.error).toBe(
      "The Free plan allows 1 user per organization and this one has 1. Upgrade on the billing screen (/dashboard/billing), or remove a user first.",
    );
    expect((await add(u.email)).status).toBe(200); // already counted: free
    const sub = await stripe.complete(sessionIdOf((await checkout(u.cookie, u.orgId, "team-20250212")).headers.get("location") ?? ""));
    // In the trial: no limits.
    for (const n of [2, 3, 4, 5]) expect((await add(`trial-${n}@example.com`)).status).toBe(200);
    const other = await t.onboardedUser();
    const team = await stripe.complete(
      sessionIdOf((await checkout(other.cookie, other.orgId, "team-20250212")).headers.get("location") ?? ""),
    );
    await stripe.send(
      "customer.subscription.updated",
      { ...team, status: "active", trial_end: null },
      { created: Math.floor(Date.now() / 1000) + 5 },
    );
    const addOther = (email: string) => t.call("/api/AddUser", { namespaceId: other.namespaceId, email }, { cookie: other.cookie });
    expect((await addOther("b@example.com")).status).toBe(200);
    expect((await addOther("c@example.com")).status).toBe(200);
    const fourth = await addOther("d@example.com");
    expect([fourth.status, fourth.body.error]).toEqual([
      403,
      "The Team plan allows 3 users per organization and this one has 3. Upgrade on the billing screen (/dashboard/billing), or remove a user first.",
    ]);
    expect((await addOther("c@example.com")).status).toBe(200); // an invited address again changes nothing
    // "Remove a user first" is something the admin can do: revoking an invitation frees its seat.
    const { users } = (await t.call("/api/ListUsers", { namespaceId: other.namespaceId }, { cookie: other.cookie })).body;
    const invitationId = users.find((u: { email: string }) => u.email === "c@example.com").invitationId;
    expect((await t.call("/api/RevokeInvitation", { invitationId }, { cookie: other.cookie })).status).toBe(200);
    expect((await addOther("d@example.com")).status).toBe(200);
    expect(sub.status).toBe("trialing");
  });

  test("limits: a publisher beyond the plan's containers is refused with the reason; below it, it joins", async () => {
    const { joinPublisher } = await import("~/services/publish/join-publisher.ts");
    const u = await t.onboardedUser();
    const principal = { kind: "namespaceToken" as const, tokenId: crypto.randomUUID(), namespaceId: u.namespaceId, orgId: u.orgId };
    const join = (running: number) => joinPublisher({ ctx: t.ctx, principal, runningPublishers: () => running });
    const joined = await join(2);
    expect(joined.namespaceId).toBe(u.namespaceId);
    // The plan's rate limit travels in the publish ticket (100 events/s for the org); billing off, none.
    const { redeemPublishTicket } = await import("~/services/publish/publish-ticket.ts");
    const claimsOf = (app: TestApp, url: string) =>
      redeemPublishTicket(app.config.sessionSecret, new URL(url).searchParams.get("ticket") ?? "", app.clock.now());
    expect(claimsOf(t, joined.websocketUrl)?.orgRateLimit).toBe(100);
    await expect(join(3)).rejects.toThrow(
      "The Free plan allows 3 containers (tapscope runs publishing at once) per organization and 3 are running. Upgrade on the billing screen (/dashboard/billing), or stop one.",
    );
    const offUser = await off.onboardedUser();
    const offPrincipal = { ...principal, namespaceId: offUser.namespaceId, orgId: offUser.orgId };
    expect((await joinPublisher({ ctx: off.ctx, principal: offPrincipal, runningPublishers: () => 500 })).namespaceId).toBe(
      offUser.namespaceId,
    );
  });

  test("a failed payment mails every admin of the org once (not its members), with the amount and where to change the card", async () => {
    const { and, eq } = await import("drizzle-orm");
    const { namespaceMembers } = await import("#db/schema/index.ts");
    const owner = await t.onboardedUser();
    // In the trial first: Free allows one user.
    const sub = await stripe.complete(
      sessionIdOf((await checkout(owner.cookie, owner.orgId, "team-20250212")).headers.get("location") ?? ""),
    );
    const second = await t.user();
    const reader = await t.user();
    await t.addMember(owner, second);
    await t.addMember(owner, reader);
    await t.db
      .update(namespaceMembers)
      .set({ hasWrite: true })
      .where(and(eq(namespaceMembers.namespaceId, owner.namespaceId), eq(namespaceMembers.userId, second.userId)));
    // The trial is over: Stripe's subscription is active, and the renewal's payment fails.
    Object.assign(sub, { status: "active", trial_end: null });
    await stripe.send("customer.subscription.updated", sub, { created: Math.floor(Date.now() / 1000) + 5 });
    const mailsBefore = smtp.messages.length;

    const failed = await stripe.failPayment(sub.id, { created: Math.floor(Date.now() / 1000) + 10 });
    expect(failed.status).toBe(200);
    const toOwner = await smtp.waitFor(owner.email);
    await smtp.waitFor(second.email);
    expect(toOwner.raw).toContain("Subject: Tapscope: the payment for your Team plan failed");
    expect(toOwner.text).toContain("The payment of $25.00 for your organization's Tapscope Team plan failed.");
    expect(toOwner.text).toContain("http://tapscope.test/dashboard/billing");
    expect(toOwner.text).toContain(failed.invoice.hosted_invoice_url);
    const status = (await t.call("/api/GetSubscription", { orgId: owner.orgId }, { cookie: owner.cookie })).body.activeSubscription.status;
    expect(status).toBe("past_due");

    // Stripe delivers an event again when it is not sure we got it: no second mail.
    const replay = await stripe.send("invoice.payment_failed", failed.invoice, { id: failed.event.id });
    expect(replay.status).toBe(200);
    await Bun.sleep(300);
    const sent = smtp.messages.slice(mailsBefore).filter((m) => m.raw.includes("payment for your Team plan failed"));
    expect(sent.flatMap((m) => m.to).sort()).toEqual([owner.email, second.email].sort());
  });

  test("Manage billing: an admin gets Stripe's customer portal for the org's customer, back to the billing screen", async () => {
    const admin = await t.onboardedUser();
    const sub = await stripe.complete(
      sessionIdOf((await checkout(admin.cookie, admin.orgId, "scale-20250212")).headers.get("location") ?? ""),
    );
    const res = await t.call("/api/OpenBillingPortal", { orgId: admin.orgId }, { cookie: admin.cookie });
    expect(res.status).toBe(200);
    const portal = stripe.portalSessions.get(/\/portal\/(\w+)$/.exec(res.body.url)?.[1] ?? "");
    expect(portal).toMatchObject({
      object: "billing_portal.session",
      customer: sub.customer,
      return_url: "http://tapscope.test/dashboard/billing",
    });
    expect(res.body.url).toBe(portal!.url);
    const page = await fetch(res.body.url);
    expect(await page.text()).toContain("Test billing portal (local stand-in for Stripe)");
  });

  test("Manage billing is refused with the reason: a member (403), a stranger (404), an org with no billing account yet (409), billing off (404)", async () => {
    const admin = await t.onboardedUser();
    const none = await t.call("/api/OpenBillingPortal", { orgId: admin.orgId }, { cookie: admin.cookie });
    expect([none.status, none.body.error]).toEqual([409, "this organization has no billing account yet: choose a plan first"]);
    await stripe.complete(sessionIdOf((await checkout(admin.cookie, admin.orgId, "team-20250212")).headers.get("location") ?? ""));
    const member = await t.user();
    await t.addMember(admin, member);
    const byMember = await t.call("/api/OpenBillingPortal", { orgId: admin.orgId }, { cookie: member.cookie });
    expect([byMember.status, byMember.body.error]).toEqual([403, "forbidden: only an org admin can manage billing"]);
    const stranger = await t.onboardedUser();
    expect((await t.call("/api/OpenBillingPortal", { orgId: admin.orgId }, { cookie: stranger.cookie })).status).toBe(404);
    const offUser = await off.onboardedUser();
    const offRes = await off.call("/api/OpenBillingPortal", { orgId: offUser.orgId }, { cookie: offUser.cookie });
    expect([offRes.status, offRes.body.error]).toEqual([404, "billing is not enabled on this server"]);
  });
});
