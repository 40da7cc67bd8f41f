import Stripe from "stripe";
import type { BillingConfig } from "~/lib/server/env.ts";

/** The Stripe client for the configured API (Stripe itself, or a local stand-in in tests). */
export function createStripe(config: BillingConfig): Stripe {
  const api = new URL(config.apiUrl);
  const protocol = api.protocol === "http:" ? "http" : "https";
  return new Stripe(config.secretKey, {
    host: api.hostname,
    port: api.port ? Number(api.port) : protocol === "http" ? 80 : 443,
    protocol,
    maxNetworkRetries: 1,
    timeout: 15_000,
  });
}
