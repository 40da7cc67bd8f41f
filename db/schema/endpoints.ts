import { doublePrecision, index, integer, pgTable, primaryKey, text, uuid } from "drizzle-orm/pg-core";
import { createdAt, id, time } from "./columns.ts";
import { namespaces } from "./namespaces.ts";
import { users } from "./users.ts";

/** A namespace's explicit route patterns, in the order its admin wrote them (lib/routes/patterns.ts). */
export const routePatterns = pgTable("route_patterns", {
  namespaceId: uuid()
    .primaryKey()
    .references(() => namespaces.id, { onDelete: "cascade" }),
  patterns: text().array().notNull(),
  updatedByUserId: uuid().references(() => users.id, { onDelete: "set null" }),
  updatedAt: createdAt(),
});

/** Positions of a namespace's routes the guard folded into {name} (engines/routes): a restarted server starts from them. */
export const routeFolds = pgTable(
  "route_folds",
  {
    namespaceId: uuid()
      .notNull()
      .references(() => namespaces.id, { onDelete: "cascade" }),
    /** The route up to the folded position (`/users`). */
    prefix: text().notNull(),
    createdAt: createdAt(),
  },
  (t) => [primaryKey({ columns: [t.namespaceId, t.prefix] })],
);

/**
 * An alert rule of a namespace: `metric` over the last `windowMinutes` of the requests of one endpoint (service,
 * host, method and route, all set or all null) and/or a filter, compared with `threshold` once at least `minRequests`
 * requests are in the window. `state` is what the last evaluation found; a change is an alert event.
 */
export const alertRules = pgTable(
  "alert_rules",
  {
    id: id(),
    namespaceId: uuid()
      .notNull()
      .references(() => namespaces.id, { onDelete: "cascade" }),
    name: text().notNull(),
    /** server_errors and all_errors: a percentage of the requests; p95 and p99: milliseconds. */
    metric: text({ enum: ["server_errors", "all_errors", "p95", "p99"] }).notNull(),
    threshold: doublePrecision().notNull(),
    windowMinutes: integer().notNull(),
    minRequests: integer().notNull(),
    service: text(),
    host: text(),
    method: text(),
    route: text(),
    filterText: text().notNull().default(""),
    emails: text().array().notNull().default([]),
    webhookUrl: text(),
    /** The webhook's signing secret, sealed with a key derived from SESSION_SECRET (the server signs with it). */
    webhookSecret: text(),
    state: text({ enum: ["ok", "firing"] })
      .notNull()
      .default("ok"),
    stateSince: time(),
    lastValue: doublePrecision(),
    lastRequests: integer(),
    lastEvaluatedAt: time(),
    createdByUserId: uuid().references(() => users.id, { onDelete: "set null" }),
    createdAt: createdAt(),
  },
  // The evaluator reads every rule; the screen a namespace's.
  (t) => [index("alert_rules_namespace_idx").on(t.namespaceId)],
);

/** A rule that fired or resolved: its history, kept to the newest per rule (services/alerts). */
export const alertEvents = pgTable(
  "alert_events",
  {
    id: id(),
    ruleId: uuid()
      .notNull()
      .references(() => alertRules.id, { onDelete: "cascade" }),
    namespaceId: uuid()
      .notNull()
      .references(() => namespaces.id, { onDelete: "cascade" }),
    kind: text({ enum: ["fired", "resolved"] }).notNull(),
    value: doublePrecision(),
    requests: integer().notNull(),
    threshold: doublePrecision().notNull(),
    createdAt: createdAt(),
  },
  // A namespace's history, newest first.
  (t) => [index("alert_events_namespace_idx").on(t.namespaceId, t.createdAt)],
);

/** One notification of an alert event to one place (an address, the webhook), and what came of it. */
export const alertDeliveries = pgTable(
  "alert_deliveries",
  {
    id: id(),
    eventId: uuid()
      .notNull()
      .references(() => alertEvents.id, { onDelete: "cascade" }),
    namespaceId: uuid()
      .notNull()
      .references(() => namespaces.id, { onDelete: "cascade" }),
    channel: text({ enum: ["email", "webhook"] }).notNull(),
    target: text().notNull(),
    status: text({ enum: ["pending", "sending", "sent", "failed"] })
      .notNull()
      .default("pending"),
    attempts: integer().notNull().default(0),
    nextAttemptAt: time().notNull(),
    lastError: text(),
    responseStatus: integer(),
    sentAt: time(),
    createdAt: createdAt(),
  },
  // The sender picks what is due; the screen lists a namespace's newest.
  (t) => [
    index("alert_deliveries_due_idx").on(t.status, t.nextAttemptAt),
    index("alert_deliveries_namespace_idx").on(t.namespaceId, t.createdAt),
  ],
);
