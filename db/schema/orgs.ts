import { boolean, index, pgTable, primaryKey, text, uuid } from "drizzle-orm/pg-core";
import { createdAt, id, time } from "./columns.ts";
import { users } from "./users.ts";

export const orgs = pgTable("orgs", {
  id: id(),
  name: text().notNull(),
  plan: text().notNull().default("free"),
  createdAt: createdAt(),
  // Sightings for the dashboard: the Requests link and the onboarding overlay read these.
  lastSeenWorkerTime: time(),
  hasSeenPublisher: boolean().notNull().default(false),
});

export const memberships = pgTable(
  "memberships",
  {
    orgId: uuid()
      .notNull()
      .references(() => orgs.id, { onDelete: "cascade" }),
    userId: uuid()
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    createdAt: createdAt(),
  },
  // Listing a user's orgs is by user: the primary key's order serves org lookups, this index the other way.
  (t) => [primaryKey({ columns: [t.orgId, t.userId] }), index("memberships_user_idx").on(t.userId)],
);

/** Organisation (worker) tokens: only the SHA-256 of the token is stored. */
export const orgTokens = pgTable(
  "org_tokens",
  {
    id: id(),
    orgId: uuid()
      .notNull()
      .references(() => orgs.id, { onDelete: "cascade" }),
    tokenHash: text().notNull().unique(),
    // The displayable last part of the token, never enough to use it.
    suffix: text().notNull(),
    label: text().notNull().default(""),
    creatorUserId: uuid().references(() => users.id, { onDelete: "set null" }),
    createdAt: createdAt(),
    lastUsedAt: time(),
  },
  (t) => [index("org_tokens_org_idx").on(t.orgId)],
);
