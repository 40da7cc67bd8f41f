import { inArray, lt, or } from "drizzle-orm";
import type { Db } from "#db/client.ts";
import { eventLog, links, loginLinks } from "#db/schema/index.ts";
import { trimEventLog } from "~/services/telemetry/trim-event-log.ts";

/** Old reports are deleted this many at a time, so one run never holds a long transaction or many ids. */
const EVENT_LOG_BATCH = 10_000;
/** Client reports (/api/Event, /api/LogEvent) are kept this long. */
export const EVENT_LOG_RETENTION_DAYS = 30;
/** A spent or expired sign-in link is kept this long past its use or expiry (EmailLogin counts an address's recent ones). */
export const LOGIN_LINK_GRACE_MS = 60 * 60 * 1000;
/** An expired shared link still answers with its expiry (the page shows "expired") this long, then it is deleted. */
export const LINK_GRACE_MS = 7 * 24 * 60 * 60 * 1000;

export type PrunedMetadata = { eventLog: number; loginLinks: number; links: number };

/**
 * Deletes what unauthenticated clients leave behind in the metadata database: old client reports (and the oldest beyond
 * their size budget), spent and expired
 * sign-in links, and shared links past their grace (nothing else refers to a link; its events live in the live
 * view's memory only).
 */
export async function pruneMetadata({
  db,
  now,
  config,
}: {
  db: Db;
  now: () => Date;
  /** EVENT_LOG_MAX_BYTES: the reports' size budget, held here too (absent: age alone). */
  config?: { eventLogMaxBytes: number };
}): Promise<PrunedMetadata> {
  const nowMs = now().getTime();
  const reportsBefore = new Date(nowMs - EVENT_LOG_RETENTION_DAYS * 86_400_000);
  let reports = 0;
  for (;;) {
    const batch = db.select({ id: eventLog.id }).from(eventLog).where(lt(eventLog.createdAt, reportsBefore)).limit(EVENT_LOG_BATCH);
    const deleted = await db.delete(eventLog).where(inArray(eventLog.id, batch)).returning({ id: eventLog.id });
    reports += deleted.length;
    if (deleted.length < EVENT_LOG_BATCH) break;
  }
  if (config) reports += await trimEventLog({ db, maxBytes: config.eventLogMaxBytes });
  const loginBefore = new Date(nowMs - LOGIN_LINK_GRACE_MS);
  const staleLogins = await db
    .delete(loginLinks)
    .where(or(lt(loginLinks.usedAt, loginBefore), lt(loginLinks.expiresAt, loginBefore)))
    .returning({ id: loginLinks.id });
  const expiredLinks = await db
    .delete(links)
    .where(lt(links.expiresAt, new Date(nowMs - LINK_GRACE_MS)))
    .returning({ id: links.id });
  return { eventLog: reports, loginLinks: staleLogins.length, links: expiredLinks.length };
}
