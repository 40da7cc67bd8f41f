import { mkdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { PGlite } from "@electric-sql/pglite";
import type { PgDatabase, PgQueryResultHKT } from "drizzle-orm/pg-core";
import { drizzle as drizzlePglite } from "drizzle-orm/pglite";
import { migrate as migratePglite } from "drizzle-orm/pglite/migrator";
import { drizzle as drizzlePostgres } from "drizzle-orm/postgres-js";
import { migrate as migratePostgres } from "drizzle-orm/postgres-js/migrator";
import postgres from "postgres";
import { embeddedMigrationsFolder, embeddedPgliteAssets, type PgliteAssets } from "~/lib/server/embedded.ts";
import * as schema from "./schema/index.ts";

export type Schema = typeof schema;
export type Db = PgDatabase<PgQueryResultHKT, Schema>;
/** The handle inside `db.transaction(async (tx) => ...)`. */
export type Tx = Parameters<Parameters<Db["transaction"]>[0]>[0];

export type Database = {
  db: Db;
  kind: "pglite" | "postgres";
  close: () => Promise<void>;
};

export const defaultMigrationsFolder = join(dirname(fileURLToPath(import.meta.url)), "migrations");

export type DatabaseOptions = {
  /** postgres:// URL; without it PGlite is used. */
  databaseUrl?: string;
  /** Where PGlite keeps its files; omitted means in memory (tests). */
  pgliteDir?: string;
  migrationsFolder?: string;
  /** PGlite's wasm modules and data bundle; defaults to the ones embedded in the compiled binary, if any. */
  pgliteAssets?: PgliteAssets;
};

/** Opens the metadata database and applies the committed migrations. */
export async function openDatabase(options: DatabaseOptions): Promise<Database> {
  const migrationsFolder = options.migrationsFolder ?? embeddedMigrationsFolder() ?? defaultMigrationsFolder;
  if (options.databaseUrl) {
    const sql = postgres(options.databaseUrl, { max: 10, onnotice: () => {} });
    const db = drizzlePostgres(sql, { schema, casing: "snake_case" });
    await migratePostgres(db, { migrationsFolder });
    return { db: db as unknown as Db, kind: "postgres", close: () => sql.end({ timeout: 5 }) };
  }
  if (options.pgliteDir) mkdirSync(options.pgliteDir, { recursive: true });
  const assets = options.pgliteAssets ?? (await embeddedPgliteAssets());
  const client = await PGlite.create(options.pgliteDir, assets);
  const db = drizzlePglite(client, { schema, casing: "snake_case" });
  await migratePglite(db, { migrationsFolder });
  return { db: db as unknown as Db, kind: "pglite", close: () => client.close() };
}

export { schema };
