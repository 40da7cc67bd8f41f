import { AppError } from "~/lib/errors.ts";

/** The header that carries an event's kind and details. */
export const TAGS_HEADER = "x-tags";
const MAX_HEADER = 32 * 1024;

/**
 * `x-tags: kind=EmailSubmitError;error_message=login%20failed%3A%20...`: pairs separated by ';', each
 * `key=value` with key and value percent-encoded (encodeURIComponent), so any text survives the header.
 */
export function parseTagsHeader(header: string | null): Record<string, string> {
  if (!header) throw new AppError("BAD_REQUEST", `invalid request: missing ${TAGS_HEADER} header`);
  if (header.length > MAX_HEADER) throw new AppError("PAYLOAD_TOO_LARGE", `${TAGS_HEADER} header is too large`);
  const tags: Record<string, string> = {};
  for (const pair of header.split(";")) {
    if (!pair.trim()) continue;
    const eq = pair.indexOf("=");
    const rawKey = eq < 0 ? pair : pair.slice(0, eq);
    const rawValue = eq < 0 ? "" : pair.slice(eq + 1);
    try {
      tags[decodeURIComponent(rawKey.trim())] = decodeURIComponent(rawValue.trim());
    } catch {
      throw new AppError("BAD_REQUEST", `invalid request: ${TAGS_HEADER}: bad percent-encoding`);
    }
  }
  return tags;
}

/** The client side of the format, for reference and tests. */
export function formatTagsHeader(tags: Record<string, string>): string {
  return Object.entries(tags)
    .map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`)
    .join(";");
}
