import { type Static, Type } from "@sinclair/typebox";
import { filterLimits } from "~/lib/filter/parse.ts";
import { patternLimits } from "~/lib/routes/patterns.ts";
import { maxRouteChars } from "~/lib/routes/template.ts";
import { Empty, Id } from "./common.ts";

/** The Endpoints screen's settings: a namespace's explicit route patterns and its alert rules. */

export const GetRoutePatternsRequest = Type.Object({ namespaceId: Id });
export const RoutePatternsResponse = Type.Object({ patterns: Type.Array(Type.String()) });
export type RoutePatternsResponse = Static<typeof RoutePatternsResponse>;
/** The whole list, in the order written; an admin's. Checked whole (lib/routes/patterns.ts): a refused list changes nothing. */
export const SetRoutePatternsRequest = Type.Object({
  namespaceId: Id,
  patterns: Type.Array(Type.String({ maxLength: patternLimits.maxChars }), { maxItems: patternLimits.maxPatterns }),
});

export const alertLimits = {
  /** Rules per namespace: what one namespace's evaluation may cost is this many store queries a round. */
  maxRules: 20,
  maxWindowMinutes: 1440,
  maxEmails: 10,
  maxWebhookUrlChars: 2048,
} as const;

/** server_errors: % of responses >= 500; all_errors: % >= 400; p95 and p99: milliseconds. */
export const AlertMetric = Type.Union([
  Type.Literal("server_errors"),
  Type.Literal("all_errors"),
  Type.Literal("p95"),
  Type.Literal("p99"),
]);
export type AlertMetric = Static<typeof AlertMetric>;

/** One endpoint of the Endpoints table, as a rule names it. */
export const AlertEndpoint = Type.Object({
  service: Type.String({ maxLength: 1024 }),
  /** An outgoing call's Host; "" for requests the program served. */
  host: Type.String({ maxLength: 1024 }),
  method: Type.String({ maxLength: 64 }),
  route: Type.String({ maxLength: maxRouteChars }),
});
export type AlertEndpoint = Static<typeof AlertEndpoint>;

/** What an admin writes: the rule fires when `metric` is above `threshold` over the last `windowMinutes`, with `minRequests` at least. */
export const AlertRuleInput = Type.Object({
  name: Type.String({ minLength: 1, maxLength: 100 }),
  metric: AlertMetric,
  /** A percentage (0..100) for the error rates, milliseconds for the percentiles. */
  threshold: Type.Number({ minimum: 0, maximum: 3_600_000 }),
  windowMinutes: Type.Integer({ minimum: 1, maximum: alertLimits.maxWindowMinutes }),
  minRequests: Type.Integer({ minimum: 1, maximum: 1_000_000_000 }),
  /** The endpoint's requests only; null: every request the filter keeps. */
  endpoint: Type.Union([AlertEndpoint, Type.Null()]),
  /** Filter-language text the requests must match too; "" for none. */
  filterText: Type.String({ maxLength: filterLimits.maxLength }),
  /** Members of the namespace to mail when it fires and resolves. */
  emails: Type.Array(Type.String({ format: "email", maxLength: 254 }), { maxItems: alertLimits.maxEmails }),
  /** http(s) URL to POST a signed JSON body to; null for none. */
  webhookUrl: Type.Union([Type.String({ maxLength: alertLimits.maxWebhookUrlChars }), Type.Null()]),
});
export type AlertRuleInput = Static<typeof AlertRuleInput>;

export const AlertState = Type.Union([Type.Literal("ok"), Type.Literal("firing")]);

export const AlertRule = Type.Composite([
  AlertRuleInput,
  Type.Object({
    ruleId: Type.String(),
    state: AlertState,
    /** ISO time of the last change of state; null before the first. */
    stateSince: Type.Union([Type.String(), Type.Null()]),
    /** What the last evaluation measured (the metric's value, the window's requests); null before it. */
    lastValue: Type.Union([Type.Number(), Type.Null()]),
    lastRequests: Type.Union([Type.Number(), Type.Null()]),
    lastEvaluatedAt: Type.Union([Type.String(), Type.Null()]),
  }),
]);
export type AlertRule = Static<typeof AlertRule>;

export const AlertEvent = Type.Object({
  eventId: Type.String(),
  ruleId: Type.String(),
  ruleName: Type.String(),
  kind: Type.Union([Type.Literal("fired"), Type.Literal("resolved")]),
  value: Type.Union([Type.Number(), Type.Null()]),
  requests: Type.Number(),
  threshold: Type.Number(),
  time: Type.String(),
});
export type AlertEvent = Static<typeof AlertEvent>;

/** One notification of an alert event, and what came of it (the delivery log). */
export const AlertDelivery = Type.Object({
  deliveryId: Type.String(),
  eventId: Type.String(),
  channel: Type.Union([Type.Literal("email"), Type.Literal("webhook")]),
  target: Type.String(),
  status: Type.Union([Type.Literal("pending"), Type.Literal("sending"), Type.Literal("sent"), Type.Literal("failed")]),
  attempts: Type.Number(),
  lastError: Type.Union([Type.String(), Type.Null()]),
  /** The webhook's HTTP status on its last attempt. */
  responseStatus: Type.Union([Type.Number(), Type.Null()]),
  time: Type.String(),
  sentAt: Type.Union([Type.String(), Type.Null()]),
  nextAttemptAt: Type.Union([Type.String(), Type.Null()]),
});
export type AlertDelivery = Static<typeof AlertDelivery>;

export const ListAlertsRequest = Type.Object({ namespaceId: Id });
/** The rules, and the newest alert events and deliveries of the namespace (at most 50 each). */
export const ListAlertsResponse = Type.Object({
  rules: Type.Array(AlertRule),
  events: Type.Array(AlertEvent),
  deliveries: Type.Array(AlertDelivery),
});
export type ListAlertsResponse = Static<typeof ListAlertsResponse>;

/** Creates a rule (no ruleId) or replaces one; `rotateSecret` gives an existing rule's webhook a new signing secret. */
export const SaveAlertRuleRequest = Type.Object({
  namespaceId: Id,
  ruleId: Type.Optional(Id),
  rule: AlertRuleInput,
  rotateSecret: Type.Optional(Type.Boolean()),
});
/** `webhookSecret`: the signing secret, shown this once (when a webhook is first set, or rotated); null otherwise. */
export const SaveAlertRuleResponse = Type.Object({ rule: AlertRule, webhookSecret: Type.Union([Type.String(), Type.Null()]) });
export type SaveAlertRuleResponse = Static<typeof SaveAlertRuleResponse>;

export const DeleteAlertRuleRequest = Type.Object({ namespaceId: Id, ruleId: Id });
export const DeleteAlertRuleResponse = Empty;
