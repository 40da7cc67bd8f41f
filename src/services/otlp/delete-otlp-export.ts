import { eq } from "drizzle-orm";
import { otlpExports } from "#db/schema/index.ts";
import type { OtlpExporter } from "~/engines/otlp/otlp-exporter.ts";
import { otlpForbiddenText } from "~/lib/protocol/api/otlp.ts";
import { requireNamespaceAccess } from "~/services/access/require-namespace-access.ts";
import type { UserPrincipal } from "~/services/auth/principal.ts";
import type { ServiceContext } from "~/services/context.ts";

/** Namespace admins remove the namespace's own settings (and its stored headers): the server-wide collector applies again. */
export async function deleteOtlpExport({
  ctx,
  principal,
  namespaceId,
  exporter,
}: {
  ctx: ServiceContext;
  principal: UserPrincipal;
  namespaceId: string;
  exporter: OtlpExporter;
}): Promise<void> {
  await requireNamespaceAccess({ ctx, principal, namespaceId, write: true, forbiddenMessage: otlpForbiddenText });
  await ctx.db.delete(otlpExports).where(eq(otlpExports.namespaceId, namespaceId));
  exporter.settingsChanged(namespaceId);
}
