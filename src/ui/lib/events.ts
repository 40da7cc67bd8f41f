import { toError } from "~/lib/errors.ts";
/**
 * Reports an event to POST /api/Event: empty body, the kind and details in the x-tags header as
 * `key=value` pairs joined by ';', each side percent-encoded. Reporting never throws: a failed report must not break the page.
 */
export const TAGS_HEADER = "x-tags";

export type EventTags = Record<string, string | number | boolean | undefined | null>;

export function encodeTags(tags: EventTags): string {
  const pairs: string[] = [];
  for (const [key, value] of Object.entries(tags)) {
    if (value === undefined || value === null) continue;
    pairs.push(`${encodeURIComponent(key)}=${encodeURIComponent(String(value).slice(0, 4000))}`);
  }
  return pairs.join(";");
}

export async function reportEvent(kind: string, tags: EventTags = {}): Promise<void> {
  try {
    await fetch("/api/Event", {
      method: "POST",
      credentials: "same-origin",
      headers: { [TAGS_HEADER]: encodeTags({ kind, ...tags }) },
      keepalive: true,
    });
  } catch {
    // best effort
  }
}

export function errorTags(err: unknown): EventTags {
  const e = toError(err);
  return { error_name: e.name, error_message: e.message, error_stack: e.stack };
}
