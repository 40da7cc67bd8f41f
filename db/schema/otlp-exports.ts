import { boolean, pgTable, text, uuid } from "drizzle-orm/pg-core";
import { createdAt } from "./columns.ts";
import { namespaces } from "./namespaces.ts";
import { users } from "./users.ts";

/**
 * A namespace's own OpenTelemetry collector: its spans go there instead of the server-wide OTEL_EXPORTER_OTLP_*
 * (or nowhere, when `isEnabled` is false). The headers (API keys) are stored encrypted (AES-256-GCM under a key derived
 * from SESSION_SECRET) and never returned: the dashboard shows their names only.
 */
export const otlpExports = pgTable("otlp_exports", {
  namespaceId: uuid()
    .primaryKey()
    .references(() => namespaces.id, { onDelete: "cascade" }),
  endpoint: text().notNull(),
  protocol: text().notNull().default("http/protobuf"),
  isEnabled: boolean().notNull().default(true),
  headerNames: text().array().notNull().default([]),
  headersSealed: text().notNull().default(""),
  updatedByUserId: uuid().references(() => users.id, { onDelete: "set null" }),
  updatedAt: createdAt(),
});
