import { randomUUID } from "node:crypto";
import { AppError } from "~/lib/errors.ts";
import { otlpForbiddenText, type SendOtlpTestSpanResponse } from "~/lib/protocol/api/otlp.ts";
import { requireNamespaceAccess } from "~/services/access/require-namespace-access.ts";
import type { UserPrincipal } from "~/services/auth/principal.ts";
import type { ServiceContext } from "~/services/context.ts";
import { loadExportDestinations } from "./export-destinations.ts";
import { shownEndpoint } from "./get-otlp-export.ts";
import { destinationProblem, encodeExportRequest, postExport } from "./otlp-http.ts";
import { exportRequest, type KeyValue, SpanKind, StatusCode, traceIdOf } from "./spans.ts";

export const OTLP_TEST_SPANS_RATE_LIMITED = "too many test spans for this namespace; try again in a minute";

/**
 * Sends one span to where the namespace's spans go now (its saved collector, or the server-wide one) and says what the
 * collector answered: the "send a test span" button. Admins only; `admit` counts it against the namespace's budget.
 */
export async function sendOtlpTestSpan({
  ctx,
  principal,
  namespaceId,
  admit,
}: {
  ctx: ServiceContext;
  principal: UserPrincipal;
  namespaceId: string;
  /** Throws RATE_LIMITED past the budget of test spans. */
  admit: () => void;
}): Promise<SendOtlpTestSpanResponse> {
  const access = await requireNamespaceAccess({ ctx, principal, namespaceId, write: true, forbiddenMessage: otlpForbiddenText });
  const found = (await loadExportDestinations({ ctx, namespaceIds: [namespaceId] })).get(namespaceId);
  const destination = found?.destination;
  if (!destination) {
    throw new AppError("BAD_REQUEST", found?.problem ?? "no collector is set for this namespace: save an endpoint first");
  }
  admit();
  const eventId = randomUUID();
  const traceId = traceIdOf(eventId);
  const nowNs = `${BigInt(ctx.now().getTime()) * 1_000_000n}`;
  const attributes: KeyValue[] = [
    { key: "tapscope.test", value: { boolValue: true } },
    { key: "tapscope.namespace", value: { stringValue: access.name } },
  ];
  const request = exportRequest([
    {
      resourceKey: "test",
      bytes: 0,
      resource: [{ key: "service.name", value: { stringValue: "tapscope" } }],
      span: {
        traceId,
        spanId: traceId.subarray(8, 16),
        name: "tapscope test span",
        kind: SpanKind.SERVER,
        startTimeUnixNano: nowNs,
        endTimeUnixNano: nowNs,
        attributes,
        status: { code: StatusCode.OK },
      },
    },
  ]);
  const started = performance.now();
  const refused =
    destination.source === "namespace" && ctx.config.otlpDestinations === "public" ? await destinationProblem(destination.url) : null;
  const answer = refused
    ? { isOk: false, status: null, message: refused }
    : await postExport(destination, encodeExportRequest(request, destination.protocol));
  return {
    isOk: answer.isOk,
    status: answer.status,
    message: answer.message,
    endpoint: shownEndpoint(destination.url),
    traceId: Buffer.from(traceId).toString("hex"),
    durationMs: Math.round(performance.now() - started),
  };
}
