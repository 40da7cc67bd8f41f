import { Elysia } from "elysia";
import { apiCall } from "~/api/call-schemas.ts";
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
    .use(apiCall(ctx, "GetOtlpExport", ({ body, principal }) => getOtlpExport({ ctx, principal, namespaceId: body.namespaceId, exporter })))
    .use(apiCall(ctx, "SaveOtlpExport", ({ body, principal }) => saveOtlpExport({ ctx, principal, input: body, exporter })))
    .use(
      apiCall(ctx, "DeleteOtlpExport", async ({ body, principal }) => {
        await deleteOtlpExport({ ctx, principal, namespaceId: body.namespaceId, exporter });
        return {};
      }),
    )
    .use(
      apiCall(ctx, "SendOtlpTestSpan", ({ body, principal }) =>
        sendOtlpTestSpan({
          ctx,
          principal,
          namespaceId: body.namespaceId,
          admit: () => limits.admit("otlpTestSpans", body.namespaceId, OTLP_TEST_SPANS_RATE_LIMITED),
        }),
      ),
    );
}
