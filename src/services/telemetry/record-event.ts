import { eventLog } from "#db/schema/index.ts";
import { AppError } from "~/lib/errors.ts";
import type { ServiceContext } from "~/services/context.ts";

/** A report's tags: at most this many besides its kind (more: refused). */
export const MAX_TAGS = 16;
/** Each value is cut to this many characters, and all values together to MAX_TAGS_CHARS, in the order sent. */
export const MAX_TAG_VALUE = 2048;
export const MAX_TAGS_CHARS = 4096;
const KIND = /^[A-Za-z0-9_.:-]{1,100}$/;
const KEY = /^[A-Za-z0-9_.:-]{1,64}$/;

/**
 * What a row costs beyond its JSON: PostgreSQL's tuple header, the id, time and indexes' entries, roughly. A flood of
 * tiny reports then counts for what it takes.
 */
export const EVENT_LOG_ROW_OVERHEAD = 128;

/**
 * Stores one client report (/api/Event, /api/LogEvent) in event_log, kept EVENT_LOG_RETENTION_DAYS and within the
 * table's size budget (trimEventLog). Tags are bounded; the caller parsed them. `admitBytes` is asked with the report's
 * size before it is stored (it throws when the client is over its share). Returns the size stored.
 */
export async function recordEvent({
  ctx,
  source,
  tags,
  userId,
  admitBytes,
}: {
  ctx: ServiceContext;
  source: "Event" | "LogEvent";
  tags: Record<string, string>;
  userId?: string;
  admitBytes?: (bytes: number) => void;
}): Promise<{ bytes: number }> {
  const { kind, ...rest } = tags;
  if (!kind || !KIND.test(kind))
    throw new AppError("BAD_REQUEST", "invalid request: tags: a kind tag (letters, digits, _ . : -) is required");
  const entries = Object.entries(rest);
  if (entries.length > MAX_TAGS) throw new AppError("BAD_REQUEST", `invalid request: tags: at most ${MAX_TAGS} tags`);
  const clean: Record<string, string> = {};
  let room = MAX_TAGS_CHARS;
  for (const [key, value] of entries) {
    if (!KEY.test(key)) throw new AppError("BAD_REQUEST", `invalid request: tags: bad tag name "${key.slice(0, 64)}"`);
    const cut = cutAt(value, Math.min(MAX_TAG_VALUE, room));
    clean[key] = cut;
    room -= cut.length;
  }
  const bytes = Buffer.byteLength(JSON.stringify({ kind, ...clean })) + EVENT_LOG_ROW_OVERHEAD;
  admitBytes?.(bytes);
  await ctx.db.insert(eventLog).values({ source, kind, tags: clean, userId: userId ?? null, bytes, createdAt: ctx.now() });
  return { bytes };
}

/** The first `n` characters, never ending on half a surrogate pair (PostgreSQL's jsonb refuses a lone one). */
function cutAt(value: string, n: number): string {
  if (value.length <= n) return value;
  const code = value.charCodeAt(n - 1);
  return value.slice(0, code >= 0xd800 && code <= 0xdbff ? n - 1 : n);
}
