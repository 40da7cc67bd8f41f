import { Elysia } from "elysia";
import { callSchemas } from "~/api/call-schemas.ts";
import { authPlugin } from "~/api/plugins/auth.ts";
import type { ClientLimits } from "~/engines/limits/client-limits.ts";
import type { OtlpExporter } from "~/engines/otlp/otlp-exporter.ts";
import type { ServiceContext } from "~/services/context.ts";
import { deleteOtlpExport } from "~/services/otlp/delete-otlp-export.ts";
import { getOtlpExport } from "~/services/otlp/get-otlp-export.ts";
import { saveOtlpExport } from "~/services/otlp/save-otlp-export.ts";
import { OTLP_TEST_SPANS_RATE_LIMITED, sendOtlpTestSpan } from "~/services/otlp/send-otlp-test-span.ts";

/** A namespace's OpenTelemetry export: GetOtlpExport, SaveOtlpExport, DeleteOtlpExport, SendOtlpTestSpan (admins). */
export function otlpRoutes(ctx: ServiceContext, exporter: OtlpExporter, limits: ClientLimits) {
  return new Elysia()
    .use(authPlugin(ctx))
    .post(
      "/api/GetOtlpExport",
      ({ body, requireUser }) => getOtlpExport({ ctx, principal: requireUser(), namespaceId: body.namespaceId, exporter }),
      callSchemas("GetOtlpExport"),
    )
    .post(
      "/api/SaveOtlpExport",
      ({ body, requireUser }) => saveOtlpExport({ ctx, principal: requireUser(), input: body, exporter }),
      callSchemas("SaveOtlpExport"),
    )
    .post(
      "/api/DeleteOtlpExport",
      async ({ body, requireUser }) => {
        await deleteOtlpExport({ ctx, principal: requireUser(), namespaceId: body.namespaceId, exporter });
        return {};
      },
      callSchemas("DeleteOtlpExport"),
    )
    .post(
      "/api/SendOtlpTestSpan",
      ({ body, requireUser }) =>
        sendOtlpTestSpan({
          ctx,
          principal: requireUser(),
          namespaceId: body.namespaceId,
          admit: () => limits.admit("otlpTestSpans", body.namespaceId, OTLP_TEST_SPANS_RATE_LIMITED),
        }),
      callSchemas("SendOtlpTestSpan"),
    );
}
