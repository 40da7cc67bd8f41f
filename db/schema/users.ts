import { index, pgTable, text, uuid } from "drizzle-orm/pg-core";
import { createdAt, id, time } from "./columns.ts";

export const users = pgTable("users", {
  id: id(),
  // Stored lower-cased; unique so an address has exactly one account.
  email: text().notNull().unique(),
  createdAt: createdAt(),
});

/** Server-side record of a signed session cookie, so LogOut can revoke it. */
export const sessions = pgTable(
  "sessions",
  {
    id: id(),
    userId: uuid()
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    createdAt: createdAt(),
    expiresAt: time().notNull(),
    revokedAt: time(),
  },
  (t) => [index("sessions_user_idx").on(t.userId)],
);

/** Magic sign-in links: only the hash of the secret is stored; single use, short-lived. */
export const loginLinks = pgTable(
  "login_links",
  {
    id: id(),
    email: text().notNull(),
    tokenHash: text().notNull().unique(),
    next: text(),
    /**
     * SHA-256 of the browser cookie set when the link was asked for: that browser signs in on opening it, any other
     * must confirm first (a link mailed to someone else's address cannot sign a victim into it unawares).
     */
    browserHash: text(),
    createdAt: createdAt(),
    expiresAt: time().notNull(),
    usedAt: time(),
  },
  // EmailLogin counts an address's recent links (rate limit) and sweeps its expired ones.
  (t) => [index("login_links_email_idx").on(t.email, t.createdAt)],
);
