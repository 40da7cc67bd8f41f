import type { TracedEvent } from "~/lib/protocol/event.ts";

/** The fields a database call is shown by (the explorer's rows may hold only some columns). */
export type DbCallFields = Partial<Pick<TracedEvent, "protocol" | "db_system" | "db_error_code" | "db_error_message">>;

const systemNames: Record<string, string> = { postgresql: "PostgreSQL", mysql: "MySQL", redis: "Redis" };
const systemShort: Record<string, string> = { postgresql: "PG", mysql: "MySQL", redis: "Redis" };

export function isDbCall(event: DbCallFields): boolean {
  return event.protocol === "db";
}

/** "PostgreSQL", "MySQL" (MariaDB too), "Redis". */
export function dbSystemName(system: string | undefined): string {
  return systemNames[system ?? ""] ?? (system || "database");
}

/** What a list shows where an HTTP method goes: "PG", "MySQL", "Redis". */
export function dbSystemShort(system: string | undefined): string {
  return systemShort[system ?? ""] ?? "DB";
}

/** What a list shows where an HTTP status goes: "OK", or the error code ("42P01", "1146", "WRONGTYPE"). */
export function dbOutcome(event: DbCallFields): string {
  if (event.db_error_code) return event.db_error_code;
  return event.db_error_message ? "ERR" : "OK";
}

export function isDbError(event: DbCallFields): boolean {
  return Boolean(event.db_error_code || event.db_error_message);
}

/** Tailwind text colour of a call's outcome. */
export function dbOutcomeClass(event: DbCallFields): string {
  return isDbError(event) ? "text-red-400" : "text-emerald-400";
}
