import { Elysia, t } from "elysia";
import { apiCall } from "~/api/call-schemas.ts";
import { authPlugin } from "~/api/plugins/auth.ts";
import { routeAccess } from "~/api/routes.ts";
import { AppError } from "~/lib/errors.ts";
import { getBillingStatus } from "~/services/billing/billing-status.ts";
import { cancelSubscription } from "~/services/billing/cancel-subscription.ts";
import { getSubscription } from "~/services/billing/get-subscription.ts";
import { handleStripeWebhook } from "~/services/billing/handle-webhook.ts";
import { openBillingPortal } from "~/services/billing/open-billing-portal.ts";
import { startCheckout } from "~/services/billing/start-checkout.ts";
import type { ServiceContext } from "~/services/context.ts";

/**
 * Billing: the plan an org is on, its subscription, checkout (a browser navigation to Stripe), cancelling, Stripe's
 * customer portal, and Stripe's webhook (authenticated by its signature, not by a session).
 */
export function billingRoutes(ctx: ServiceContext) {
  return (
    new Elysia()
      .use(apiCall(ctx, "GetBillingStatus", ({ body, principal }) => getBillingStatus({ ctx, principal, orgId: body.orgId })))
      .use(apiCall(ctx, "GetSubscription", ({ body, principal }) => getSubscription({ ctx, principal, orgId: body.orgId })))
      .use(
        apiCall(ctx, "CancelSubscription", async ({ body, principal }) => {
          await cancelSubscription({ ctx, principal, stripeSubscriptionId: body.stripeSubscriptionId });
          return {};
        }),
      )
      .use(apiCall(ctx, "OpenBillingPortal", ({ body, principal }) => openBillingPortal({ ctx, principal, orgId: body.orgId })))
      .use(
        new Elysia().use(authPlugin(ctx, routeAccess("GET /api/StripeRedirect"))).get(
          "/api/StripeRedirect",
          async ({ query, principal, set }) => {
            set.status = 302;
            set.headers["cache-control"] = "no-store";
            if (principal?.kind !== "user") {
              set.headers.location = `/login?next=${encodeURIComponent("/dashboard/billing")}`;
              return "";
            }
            try {
              set.headers.location = await startCheckout({ ctx, principal, orgId: query.org_id, tierName: query.tier_name });
            } catch (err) {
              if (!(err instanceof AppError)) throw err;
              // A navigation: the billing screen shows why.
              set.headers.location = `/dashboard/billing?error=${encodeURIComponent(err.message)}`;
            }
            return "";
          },
          { query: t.Object({ org_id: t.String({ maxLength: 64 }), tier_name: t.String({ maxLength: 64 }) }) },
        ),
      )
      // The body arrives as its exact text (body-limit keeps it raw for this path), read up to the API's body limit.
      .post("/api/StripeWebhook", ({ body, request }) =>
        handleStripeWebhook({ ctx, rawBody: typeof body === "string" ? body : "", signature: request.headers.get("stripe-signature") }),
      )
  );
}
