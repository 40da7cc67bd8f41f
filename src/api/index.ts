import { Elysia } from "elysia";
import type { AppDeps } from "~/server.ts";

/** Every /api/* endpoint. Each area is a thin controller under src/api/<area>/. */
export function apiRoutes(_deps: AppDeps) {
  return new Elysia({ name: "api" }).get("/api/health", () => ({ ok: true }));
}
