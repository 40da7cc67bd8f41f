export * from "./billing.ts";
export * from "./endpoints.ts";
export * from "./event-log.ts";
export * from "./links.ts";
export * from "./namespaces.ts";
export * from "./orgs.ts";
export * from "./users.ts";
export * from "./workers.ts";
