import { otlpExports } from "#db/schema/index.ts";
import type { OtlpExporter } from "~/engines/otlp/otlp-exporter.ts";
import { AppError } from "~/lib/errors.ts";
import { type OtlpExportResponse, otlpForbiddenText, type SaveOtlpExportRequest } from "~/lib/protocol/api/otlp.ts";
import { requireNamespaceAccess } from "~/services/access/require-namespace-access.ts";
import type { UserPrincipal } from "~/services/auth/principal.ts";
import type { ServiceContext } from "~/services/context.ts";
import { tracesUrl } from "./export-destinations.ts";
import { getOtlpExport } from "./get-otlp-export.ts";
import { destinationProblem } from "./otlp-http.ts";
import { sealHeaders } from "./sealed-headers.ts";

/** Headers the request itself sets: a collector's settings may not replace them. */
const reservedHeaders = new Set([
  "host",
  "content-type",
  "content-length",
  "content-encoding",
  "transfer-encoding",
  "connection",
  "te",
  "upgrade",
]);

/** Why an endpoint is refused, or null. */
export function endpointProblem(endpoint: string): string | null {
  let url: URL;
  try {
    url = new URL(endpoint);
  } catch {
    return "the endpoint must be a URL, like https://otlp.example.com or http://collector:4318";
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") return "the endpoint must be an http:// or https:// URL (OTLP/HTTP)";
  if (url.username || url.password) return "put credentials in a header, not in the endpoint URL";
  if (url.hash) return "the endpoint must not have a #fragment";
  return null;
}

/** Why a header is refused, or null. */
export function headerProblem(name: string, value: string): string | null {
  if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(name)) return `"${name.slice(0, 40)}" is not a header name`;
  if (reservedHeaders.has(name.toLowerCase())) return `${name} is set by the export itself`;
  // biome-ignore lint/suspicious/noControlCharactersInRegex: a header value must not carry control characters
  if (/[\x00-\x08\x0a-\x1f\x7f]/.test(value)) return `the value of ${name} holds a control character`;
  return null;
}

/**
 * Namespace admins point the namespace's spans at their own collector (or turn its export off). Headers given replace
 * the stored ones; headers omitted stay. The exporter reads the change at once on this node, within seconds on others.
 */
export async function saveOtlpExport({
  ctx,
  principal,
  input,
  exporter,
}: {
  ctx: ServiceContext;
  principal: UserPrincipal;
  input: SaveOtlpExportRequest;
  exporter: OtlpExporter;
}): Promise<OtlpExportResponse> {
  const { namespaceId, protocol, isEnabled } = input;
  await requireNamespaceAccess({ ctx, principal, namespaceId, write: true, forbiddenMessage: otlpForbiddenText });
  const endpoint = input.endpoint.trim();
  if (endpoint || isEnabled) {
    const problem = endpointProblem(endpoint);
    if (problem) throw new AppError("BAD_REQUEST", problem);
    if (ctx.config.otlpDestinations === "public") {
      const refused = await destinationProblem(tracesUrl(endpoint));
      if (refused) throw new AppError("BAD_REQUEST", refused);
    }
  }
  let headers: Array<[string, string]> | undefined;
  if (input.headers) {
    headers = [];
    const seen = new Set<string>();
    for (const { name, value } of input.headers) {
      const problem = headerProblem(name.trim(), value);
      if (problem) throw new AppError("BAD_REQUEST", problem);
      if (seen.has(name.trim().toLowerCase())) throw new AppError("BAD_REQUEST", `${name.trim()} is given twice`);
      seen.add(name.trim().toLowerCase());
      headers.push([name.trim(), value.trim()]);
    }
  }
  const values = {
    endpoint,
    protocol,
    isEnabled,
    updatedByUserId: principal.userId,
    updatedAt: ctx.now(),
    ...(headers ? { headerNames: headers.map(([name]) => name), headersSealed: sealHeaders(ctx.config.sessionSecret, headers) } : {}),
  };
  await ctx.db
    .insert(otlpExports)
    .values({ namespaceId, ...values })
    .onConflictDoUpdate({ target: otlpExports.namespaceId, set: values });
  exporter.settingsChanged(namespaceId);
  return getOtlpExport({ ctx, principal, namespaceId, exporter });
}
