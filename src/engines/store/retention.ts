import { eq } from "drizzle-orm";
import type { Db } from "#db/client.ts";
import { namespaces, orgs } from "#db/schema/index.ts";
import type { Config } from "~/lib/server/env.ts";
import { log } from "~/lib/server/logger.ts";
import { pruneMetadata } from "~/services/store/prune-metadata.ts";
import type { EventStore } from "~/store/types.ts";

/** Days of events kept per plan. */
export const planRetentionDays: Record<string, number> = { free: 3, team: 7, scale: 30 };

/**
 * A namespace's retention: its org's plan when plans apply (billing on, or PLAN_RETENTION), otherwise the server's
 * own RETENTION_DAYS (a self-hosted server keeps what its operator configured). With billing, the org's plan is what
 * Stripe's webhooks last said (orgs.plan); Enterprise keeps the server's RETENTION_DAYS.
 */
export function retentionDaysFor(
  plan: string | null | undefined,
  config: Pick<Config, "retentionDays" | "planRetention" | "billing">,
): number {
  if (!config.planRetention && !config.billing) return config.retentionDays;
  if (plan === "enterprise") return config.retentionDays;
  return planRetentionDays[plan ?? "free"] ?? planRetentionDays.free ?? 3;
}

/** Applies retention to every namespace table the store holds. */
export async function applyRetention(deps: { db: Db; config: Config; store: EventStore; now: () => Date }): Promise<number> {
  const stored = await deps.store.listNamespaces();
  if (stored.length === 0) return 0;
  const plans = new Map<string, string>();
  const rows = await deps.db.select({ id: namespaces.id, plan: orgs.plan }).from(namespaces).innerJoin(orgs, eq(namespaces.orgId, orgs.id));
  for (const r of rows) plans.set(r.id, r.plan);
  const nowMs = deps.now().getTime();
  let applied = 0;
  for (const ns of stored) {
    // A table whose namespace is gone keeps the strictest retention until it is dropped.
    const days = plans.has(ns) ? retentionDaysFor(plans.get(ns), deps.config) : Math.min(3, deps.config.retentionDays);
    try {
      await deps.store.applyRetention(ns, days, nowMs);
      applied++;
    } catch (err) {
      log.error("retention failed", { namespaceId: ns, err });
    }
  }
  return applied;
}

/**
 * Runs retention after `firstRunMs` and then every `intervalMs` (hourly by default): the stored events', then the
 * metadata's (pruneMetadata). The returned stop waits for a run in progress.
 */
export function startRetention(
  deps: { db: Db; config: Config; store: EventStore; now: () => Date },
  { intervalMs = 3_600_000, firstRunMs = 0 }: { intervalMs?: number; firstRunMs?: number } = {},
): () => Promise<void> {
  let running: Promise<unknown> | null = null;
  const tick = () => {
    if (running) return;
    running = applyRetention(deps)
      .catch((err) => log.error("retention run failed", { err }))
      .then(() => pruneMetadata(deps))
      .then((pruned) => log.debug("metadata pruned", pruned))
      .catch((err) => log.error("metadata retention failed", { err }))
      .finally(() => {
        running = null;
      });
  };
  let timer: ReturnType<typeof setInterval> | undefined;
  const start = () => {
    tick();
    timer = setInterval(tick, intervalMs);
    timer.unref?.();
  };
  const first = firstRunMs > 0 ? setTimeout(start, firstRunMs) : undefined;
  first?.unref?.();
  if (!first) start();
  return async () => {
    clearTimeout(first);
    clearInterval(timer);
    await running;
  };
}
