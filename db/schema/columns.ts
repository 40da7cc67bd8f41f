import { timestamp, uuid } from "drizzle-orm/pg-core";

/** Shared column mixins. */
export const id = () => uuid().primaryKey().defaultRandom();
export const createdAt = () => timestamp({ withTimezone: true, mode: "date" }).notNull().defaultNow();
export const time = () => timestamp({ withTimezone: true, mode: "date" });
