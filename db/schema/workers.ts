import { pgTable, text, uuid } from "drizzle-orm/pg-core";
import { time } from "./columns.ts";
import { orgs } from "./orgs.ts";

/**
 * Orgs whose events live in their own self-hosted worker (`tapscope worker`): while it is away their events are
 * refused, never kept by the server. `nodeId` is the server node holding its socket now (null while away), so any
 * node of a cluster can reach it (engines/workers, ADR 0021).
 */
export const workerOrgs = pgTable("worker_orgs", {
  orgId: uuid()
    .primaryKey()
    .references(() => orgs.id, { onDelete: "cascade" }),
  nodeId: text(),
  connectedAt: time(),
});
