import { Elysia } from "elysia";
import type { AppDeps } from "~/server.ts";

/** WebSocket channels, one file each: publish, subscribe, tunnel, link-ping. */
export function wsRoutes(_deps: AppDeps) {
  return new Elysia({ name: "ws" });
}
