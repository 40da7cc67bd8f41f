import { PGlite } from "@electric-sql/pglite";
import { drizzle } from "drizzle-orm/pglite";
import { migrate } from "drizzle-orm/pglite/migrator";
import { type Database, type Db, defaultMigrationsFolder } from "#db/client.ts";
import * as schema from "#db/schema/index.ts";

/**
 * Fresh in-memory PGlite databases for tests. The committed migrations run once per test process on a
 * template; every caller gets a clone of it (about 0.2 s instead of 1.5 s for a new instance + migrations).
 */
let template: Promise<PGlite> | undefined;

async function migratedTemplate(): Promise<PGlite> {
  const client = await PGlite.create();
  await migrate(drizzle(client, { schema, casing: "snake_case" }), { migrationsFolder: defaultMigrationsFolder });
  return client;
}

export async function createTestPglite(): Promise<Database> {
  template ??= migratedTemplate();
  const client = await (await template).clone();
  const db = drizzle({ client: client as PGlite, schema, casing: "snake_case" });
  return { db: db as unknown as Db, kind: "pglite", close: () => client.close() };
}
