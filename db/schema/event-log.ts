import { bigserial, index, integer, jsonb, pgTable, text, uuid } from "drizzle-orm/pg-core";
import { createdAt } from "./columns.ts";

/** What the web client reports through /api/Event and /api/LogEvent. */
export const eventLog = pgTable(
  "event_log",
  {
    id: bigserial({ mode: "number" }).primaryKey(),
    source: text().notNull(),
    kind: text().notNull(),
    tags: jsonb().$type<Record<string, string>>().notNull(),
    userId: uuid(),
    /** The report's size (its kind and tags as JSON, in bytes): the table's size budget sums these. */
    bytes: integer().notNull().default(0),
    createdAt: createdAt(),
  },
  // Retention deletes by age alone.
  (t) => [index("event_log_kind_idx").on(t.kind, t.createdAt), index("event_log_created_idx").on(t.createdAt)],
);
