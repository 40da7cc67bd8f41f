import Stripe from "stripe";

/**
 * A local HTTP server that speaks the part of Stripe's API Tapscope uses (checkout sessions, subscriptions,
 * cancel, customer portal sessions), the stand-in for Stripe in tests (Stripe itself cannot be reached from here). It
 * serves a checkout page and a customer portal page; completing a checkout creates the subscription and delivers signed
 * webhooks, as Stripe would, to `deliver`, and `failPayment` delivers an invoice.payment_failed for a subscription.
 * Objects follow Stripe's API reference shapes (an invoice names its subscription under parent.subscription_details).
 */
export type StandinSubscription = {
  id: string;
  object: "subscription";
  customer: string;
  status: string;
  trial_end: number | null;
  canceled_at: number | null;
  metadata: Record<string, string>;
  items: {
    object: "list";
    data: Array<{ id: string; price: { id: string; unit_amount: number; currency: string }; current_period_end: number }>;
  };
};

type Session = {
  id: string;
  object: "checkout.session";
  url: string;
  mode: string;
  status: "open" | "complete";
  price: string;
  client_reference_id: string | null;
  customer: string | null;
  customer_email: string | null;
  success_url: string;
  cancel_url: string;
  trialDays: number;
  subscriptionMetadata: Record<string, string>;
  subscription: string | null;
};

/** A customer portal session as Stripe's API returns it (billing_portal.session). */
export type StandinPortalSession = {
  id: string;
  object: "billing_portal.session";
  configuration: string;
  created: number;
  customer: string;
  flow: null;
  livemode: false;
  locale: null;
  on_behalf_of: null;
  return_url: string | null;
  url: string;
};

/** The part of Stripe's invoice object the product reads, as a failed renewal carries it. */
export type StandinInvoice = {
  id: string;
  object: "invoice";
  customer: string;
  amount_due: number;
  amount_paid: number;
  amount_remaining: number;
  attempt_count: number;
  attempted: boolean;
  billing_reason: "subscription_cycle";
  collection_method: "charge_automatically";
  currency: string;
  created: number;
  hosted_invoice_url: string;
  next_payment_attempt: number | null;
  parent: { type: "subscription_details"; subscription_details: { subscription: string; metadata: Record<string, string> } };
  status: "open";
};

export const STANDIN_PRICES: Record<string, number> = { price_team_test: 2500, price_scale_test: 59900 };
export const WEBHOOK_SECRET = "whsec_standin_0123456789";

export function startStripeStandin(deliver: (payload: string, signature: string) => Promise<Response>) {
  const sessions = new Map<string, Session>();
  const subscriptions = new Map<string, StandinSubscription>();
  const portalSessions = new Map<string, StandinPortalSession>();
  const invoices = new Map<string, StandinInvoice>();
  const delivered: Array<{ id: string; type: string; status: number }> = [];
  const signer = new Stripe("sk_test_standin");
  let n = 0;
  const next = (prefix: string) => `${prefix}_standin_${++n}`;
  const now = () => Math.floor(Date.now() / 1000);

  /** Sends one event (signed with the webhook secret) and records what the server answered. */
  async function send(type: string, object: unknown, options: { id?: string; created?: number; timestamp?: number } = {}) {
    const event = { id: options.id ?? next("evt"), object: "event", type, created: options.created ?? now(), data: { object } };
    const payload = JSON.stringify(event);
    const signature = await signer.webhooks.generateTestHeaderStringAsync({
      payload,
      secret: WEBHOOK_SECRET,
      timestamp: options.timestamp,
    });
    const res = await deliver(payload, signature);
    delivered.push({ id: event.id, type, status: res.status });
    return { event, status: res.status };
  }

  async function complete(sessionId: string) {
    const session = sessions.get(sessionId);
    if (!session || session.status !== "open") throw new Error(`no open checkout session ${sessionId}`);
    const customer = session.customer ?? next("cus");
    const amount = STANDIN_PRICES[session.price] ?? 0;
    const sub: StandinSubscription = {
      id: next("sub"),
      object: "subscription",
      customer,
      status: session.trialDays > 0 ? "trialing" : "active",
      trial_end: session.trialDays > 0 ? now() + session.trialDays * 86400 : null,
      canceled_at: null,
      metadata: session.subscriptionMetadata,
      items: {
        object: "list",
        data: [
          { id: next("si"), price: { id: session.price, unit_amount: amount, currency: "usd" }, current_period_end: now() + 30 * 86400 },
        ],
      },
    };
    subscriptions.set(sub.id, sub);
    session.status = "complete";
    session.subscription = sub.id;
    session.customer = customer;
    await send("customer.subscription.created", sub);
    await send("checkout.session.completed", { ...session, subscription: sub.id });
    return sub;
  }

  /** A renewal that fails: the invoice, the subscription past due, and the invoice.payment_failed webhook. */
  async function failPayment(subscriptionId: string, options: { created?: number } = {}) {
    const sub = subscriptions.get(subscriptionId);
    if (!sub) throw new Error(`no subscription ${subscriptionId}`);
    const item = sub.items.data[0]!;
    const id = next("in");
    const invoice: StandinInvoice = {
      id,
      object: "invoice",
      customer: sub.customer,
      amount_due: item.price.unit_amount,
      amount_paid: 0,
      amount_remaining: item.price.unit_amount,
      attempt_count: 1,
      attempted: true,
      billing_reason: "subscription_cycle",
      collection_method: "charge_automatically",
      currency: item.price.currency,
      created: now(),
      hosted_invoice_url: `${server.url.origin}/invoice/${id}`,
      next_payment_attempt: now() + 3 * 86400,
      parent: { type: "subscription_details", subscription_details: { subscription: sub.id, metadata: sub.metadata } },
      status: "open",
    };
    invoices.set(id, invoice);
    if (sub.status === "active") sub.status = "past_due";
    return { invoice, ...(await send("invoice.payment_failed", invoice, options)) };
  }

  const json = (value: unknown, status = 200) => Response.json(value, { status });
  const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(req) {
      const url = new URL(req.url);
      const path = url.pathname;
      if (req.method === "POST" && path === "/v1/checkout/sessions") {
        const form = new URLSearchParams(await req.text());
        const price = form.get("line_items[0][price]") ?? "";
        if (!(price in STANDIN_PRICES))
          return json({ error: { type: "invalid_request_error", message: `No such price: '${price}'` } }, 400);
        const metadata: Record<string, string> = {};
        for (const [key, value] of form) {
          const m = /^subscription_data\[metadata\]\[(\w+)\]$/.exec(key);
          if (m) metadata[m[1]!] = value;
        }
        const id = next("cs");
        const session: Session = {
          id,
          object: "checkout.session",
          url: `${server.url.origin}/pay/${id}`,
          mode: form.get("mode") ?? "",
          status: "open",
          price,
          client_reference_id: form.get("client_reference_id"),
          customer: form.get("customer"),
          customer_email: form.get("customer_email"),
          success_url: form.get("success_url") ?? "",
          cancel_url: form.get("cancel_url") ?? "",
          trialDays: Number(form.get("subscription_data[trial_period_days]") ?? 0),
          subscriptionMetadata: metadata,
          subscription: null,
        };
        sessions.set(id, session);
        return json(session);
      }
      if (req.method === "POST" && path === "/v1/billing_portal/sessions") {
        const form = new URLSearchParams(await req.text());
        const customer = form.get("customer") ?? "";
        const known = [...subscriptions.values()].some((sub) => sub.customer === customer);
        if (!known)
          return json({ error: { type: "invalid_request_error", message: `No such customer: '${customer}'`, param: "customer" } }, 400);
        const id = next("bps");
        const portal: StandinPortalSession = {
          id,
          object: "billing_portal.session",
          configuration: "bpc_standin",
          created: now(),
          customer,
          flow: null,
          livemode: false,
          locale: null,
          on_behalf_of: null,
          return_url: form.get("return_url"),
          url: `${server.url.origin}/portal/${id}`,
        };
        portalSessions.set(id, portal);
        return json(portal);
      }
      const portalPage = /^\/portal\/(\w+)$/.exec(path);
      if (portalPage) {
        const portal = portalSessions.get(portalPage[1]!);
        if (!portal) return new Response("no such portal session", { status: 404 });
        const own = [...invoices.values()].filter((inv) => inv.customer === portal.customer);
        const rows = own.map(
          (inv) => `<li>${escapeHtml(inv.id)}: ${(inv.amount_due / 100).toFixed(2)} ${inv.currency.toUpperCase()}, ${inv.status}</li>`,
        );
        return new Response(
          `<!doctype html><title>Test billing portal</title><h1>Test billing portal (local stand-in for Stripe)</h1><p>Customer ${escapeHtml(portal.customer)}</p><h2>Invoices</h2><ul>${rows.join("") || "<li>No invoices</li>"}</ul><a href="${escapeHtml(portal.return_url ?? "/")}">Return to Tapscope</a>`,
          { headers: { "content-type": "text/html; charset=utf-8" } },
        );
      }
      const sub = /^\/v1\/subscriptions\/([\w]+)$/.exec(path);
      if (sub) {
        const found = subscriptions.get(sub[1]!);
        if (!found) return json({ error: { type: "invalid_request_error", message: `No such subscription: '${sub[1]}'` } }, 404);
        if (req.method === "DELETE") {
          found.status = "canceled";
          found.canceled_at = now();
          await send("customer.subscription.deleted", found);
        }
        return json(found);
      }
      const pay = /^\/pay\/(\w+)$/.exec(path);
      if (pay) {
        const session = sessions.get(pay[1]!);
        if (!session) return new Response("no such checkout", { status: 404 });
        if (req.method === "POST") {
          await complete(session.id);
          return Response.redirect(session.success_url, 303);
        }
        const amount = ((STANDIN_PRICES[session.price] ?? 0) / 100).toFixed(2);
        return new Response(
          `<!doctype html><title>Test checkout</title><h1>Test checkout (local stand-in for Stripe)</h1><p>$${amount} per month${session.trialDays ? `, ${session.trialDays}-day trial` : ""}</p><form method="post"><button>Pay</button></form><a href="${session.cancel_url}">Cancel</a>`,
          { headers: { "content-type": "text/html; charset=utf-8" } },
        );
      }
      return json({ error: { type: "invalid_request_error", message: `Unrecognized request URL (${req.method}: ${path})` } }, 404);
    },
  });
  return {
    url: server.url.origin,
    sessions,
    subscriptions,
    portalSessions,
    invoices,
    delivered,
    send,
    complete,
    failPayment,
    stop: () => server.stop(true),
  };
}
