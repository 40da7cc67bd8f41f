import { eventLog } from "#db/schema/index.ts";
import { AppError } from "~/lib/errors.ts";
import type { ServiceContext } from "~/services/context.ts";

export const MAX_TAGS = 32;
export const MAX_TAG_VALUE = 8192;
const KIND = /^[A-Za-z0-9_.:-]{1,100}$/;
const KEY = /^[A-Za-z0-9_.:-]{1,64}$/;

/** Stores one client report (/api/Event, /api/LogEvent) in event_log. Tags are bounded; the caller parsed them. */
export async function recordEvent({
  ctx,
  source,
  tags,
  userId,
}: {
  ctx: ServiceContext;
  source: "Event" | "LogEvent";
  tags: Record<string, string>;
  userId?: string;
}): Promise<void> {
  const { kind, ...rest } = tags;
  if (!kind || !KIND.test(kind)) throw new AppError("BAD_REQUEST", "invalid request: tags: a kind tag (letters, digits, _ . : -) is required");
  const entries = Object.entries(rest);
  if (entries.length > MAX_TAGS) throw new AppError("BAD_REQUEST", `invalid request: tags: at most ${MAX_TAGS} tags`);
  const clean: Record<string, string> = {};
  for (const [key, value] of entries) {
    if (!KEY.test(key)) throw new AppError("BAD_REQUEST", `invalid request: tags: bad tag name "${key.slice(0, 64)}"`);
    clean[key] = value.length > MAX_TAG_VALUE ? value.slice(0, MAX_TAG_VALUE) : value;
  }
  await ctx.db.insert(eventLog).values({ source, kind, tags: clean, userId: userId ?? null, createdAt: ctx.now() });
}
