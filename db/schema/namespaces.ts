import { boolean, index, pgTable, primaryKey, text, uniqueIndex, uuid } from "drizzle-orm/pg-core";
import { createdAt, id, time } from "./columns.ts";
import { orgs } from "./orgs.ts";
import { users } from "./users.ts";

export const namespaces = pgTable(
  "namespaces",
  {
    id: id(),
    orgId: uuid()
      .notNull()
      .references(() => orgs.id, { onDelete: "cascade" }),
    name: text().notNull(),
    createdAt: createdAt(),
  },
  // Names are unique within an org: they appear in dashboard URLs.
  (t) => [uniqueIndex("namespaces_org_name_idx").on(t.orgId, t.name)],
);

export const namespaceMembers = pgTable(
  "namespace_members",
  {
    namespaceId: uuid()
      .notNull()
      .references(() => namespaces.id, { onDelete: "cascade" }),
    userId: uuid()
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    hasWrite: boolean().notNull().default(false),
    joinedAt: createdAt(),
  },
  (t) => [primaryKey({ columns: [t.namespaceId, t.userId] }), index("namespace_members_user_idx").on(t.userId)],
);

/** Tracer tokens of a namespace: only the SHA-256 of the token is stored. */
export const namespaceTokens = pgTable(
  "namespace_tokens",
  {
    id: id(),
    namespaceId: uuid()
      .notNull()
      .references(() => namespaces.id, { onDelete: "cascade" }),
    tokenHash: text().notNull().unique(),
    suffix: text().notNull(),
    // What the token is for, named by its admins ("staging api", "Onboarding"); empty when unnamed.
    label: text().notNull().default(""),
    creatorUserId: uuid().references(() => users.id, { onDelete: "set null" }),
    createdAt: createdAt(),
    // Written when the token authenticates, at most once a minute (lib/protocol/api/tokens.ts).
    lastUsedAt: time(),
  },
  (t) => [index("namespace_tokens_namespace_idx").on(t.namespaceId)],
);

/**
 * An invitation of an address to a namespace: pending until the person signed in with that address accepts it (then
 * acceptedAt is set and they are a member) or declines it, or an admin revokes it (both delete the row).
 */
export const invitations = pgTable(
  "invitations",
  {
    id: id(),
    namespaceId: uuid()
      .notNull()
      .references(() => namespaces.id, { onDelete: "cascade" }),
    email: text().notNull(),
    hasWrite: boolean().notNull().default(false),
    invitedByUserId: uuid().references(() => users.id, { onDelete: "set null" }),
    createdAt: createdAt(),
    acceptedAt: time(),
  },
  // Sign-in looks invitations up by address.
  (t) => [uniqueIndex("invitations_namespace_email_idx").on(t.namespaceId, t.email), index("invitations_email_idx").on(t.email)],
);
