import { Elysia } from "elysia";
import type { AppDeps } from "~/server.ts";

/** Static assets (hashed, cached immutable) and the server-rendered React pages. */
export function pageRoutes(_deps: AppDeps) {
  return new Elysia({ name: "pages" });
}
