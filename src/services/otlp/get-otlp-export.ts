import { eq } from "drizzle-orm";
import { otlpExports, users } from "#db/schema/index.ts";
import type { OtlpExporter } from "~/engines/otlp/otlp-exporter.ts";
import { type OtlpExportResponse, otlpForbiddenText } from "~/lib/protocol/api/otlp.ts";
import type { Config } from "~/lib/server/env.ts";
import { requireNamespaceAccess } from "~/services/access/require-namespace-access.ts";
import type { UserPrincipal } from "~/services/auth/principal.ts";
import type { ServiceContext } from "~/services/context.ts";
import { openHeaders } from "./sealed-headers.ts";

/** A URL as it may be shown: no userinfo, no query (either may hold a key). */
export function shownEndpoint(endpoint: string): string {
  try {
    const url = new URL(endpoint);
    url.username = "";
    url.password = "";
    url.search = "";
    url.hash = "";
    return url.toString();
  } catch {
    return "";
  }
}

export function serverDefault(config: Pick<Config, "otlp">): OtlpExportResponse["serverDefault"] {
  return config.otlp ? { endpoint: shownEndpoint(config.otlp.url), protocol: config.otlp.protocol } : null;
}

/** A namespace's export settings (header names only), where its spans go now and what this node sent: admins only. */
export async function getOtlpExport({
  ctx,
  principal,
  namespaceId,
  exporter,
}: {
  ctx: ServiceContext;
  principal: UserPrincipal;
  namespaceId: string;
  exporter: OtlpExporter;
}): Promise<OtlpExportResponse> {
  await requireNamespaceAccess({ ctx, principal, namespaceId, write: true, forbiddenMessage: otlpForbiddenText });
  const [row] = await ctx.db
    .select({
      endpoint: otlpExports.endpoint,
      protocol: otlpExports.protocol,
      isEnabled: otlpExports.isEnabled,
      headerNames: otlpExports.headerNames,
      headersSealed: otlpExports.headersSealed,
      updatedAt: otlpExports.updatedAt,
      updatedByEmail: users.email,
    })
    .from(otlpExports)
    .leftJoin(users, eq(users.id, otlpExports.updatedByUserId))
    .where(eq(otlpExports.namespaceId, namespaceId))
    .limit(1);
  const settings: OtlpExportResponse["settings"] = row
    ? {
        endpoint: row.endpoint,
        protocol: row.protocol === "http/json" ? "http/json" : "http/protobuf",
        isEnabled: row.isEnabled,
        headerNames: row.headerNames,
        areHeadersReadable: openHeaders(ctx.config.sessionSecret, row.headersSealed) !== null,
        updateTime: row.updatedAt.toISOString(),
        updatedByEmail: row.updatedByEmail ?? null,
      }
    : null;
  const destination = settings ? (settings.isEnabled && settings.endpoint ? "namespace" : "none") : ctx.config.otlp ? "server" : "none";
  return { settings, serverDefault: serverDefault(ctx.config), destination, stats: exporter.statsFor(namespaceId) };
}
