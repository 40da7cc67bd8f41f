/**
 * The plans: one definition for the pricing page, the billing screen and the plan limits.
 * `limits` null means unlimited.
 */
export type PlanId = "free" | "team" | "scale" | "enterprise";

export type Plan = {
  id: PlanId;
  name: string;
  /** The card provider's tier name; null for plans not bought by card. */
  tier: "team-20250212" | "scale-20250212" | null;
  price: string;
  period: string | null;
  audience: string;
  features: string[];
  limits: { users: number | null; containers: number | null; retentionDays: number | null };
};

export const plans: readonly Plan[] = [
  {
    id: "free",
    name: "Free",
    tier: null,
    price: "$0",
    period: "per month",
    audience: "For hobbyists",
    features: ["Unlimited requests", "1 user", "3 containers", "3 days retention"],
    limits: { users: 1, containers: 3, retentionDays: 3 },
  },
  {
    id: "team",
    name: "Team",
    tier: "team-20250212",
    price: "$25",
    period: "per month",
    audience: "For small teams",
    features: ["Unlimited requests", "3 users", "10 containers", "7 days retention", "Centralized billing"],
    limits: { users: 3, containers: 10, retentionDays: 7 },
  },
  {
    id: "scale",
    name: "Scale",
    tier: "scale-20250212",
    price: "$599",
    period: "per month",
    audience: "For growing companies",
    features: [
      "Unlimited requests",
      "20 users",
      "100 containers",
      "30 days retention",
      "Centralized billing",
      "SOC2 and HIPAA",
      "SAML and OIDC",
      "Private chat channel",
    ],
    limits: { users: 20, containers: 100, retentionDays: 30 },
  },
  {
    id: "enterprise",
    name: "Enterprise",
    tier: null,
    price: "Custom",
    period: null,
    audience: "For large organisations",
    features: ["Unlimited everything", "On-premise support", "Uptime SLAs"],
    limits: { users: null, containers: null, retentionDays: null },
  },
];

/** Every plan averages this many requests per second, short bursts allowed. */
export const PLAN_RATE_LIMIT_PER_SECOND = 100;
export const TRIAL_DAYS = 14;
