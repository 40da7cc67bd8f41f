import { index, pgTable, text, uuid } from "drizzle-orm/pg-core";
import { createdAt, time } from "./columns.ts";
import { namespaces } from "./namespaces.ts";

/**
 * Shared links: an anonymous run's events are visible to whoever holds the unguessable id until expiry.
 * A link may also be tied to a namespace (a run with a token that asked for a link).
 */
export const links = pgTable(
  "links",
  {
    id: text().primaryKey(),
    namespaceId: uuid().references(() => namespaces.id, { onDelete: "cascade" }),
    createdAt: createdAt(),
    expiresAt: time().notNull(),
  },
  // Expired links are swept by time.
  (t) => [index("links_expires_idx").on(t.expiresAt)],
);
