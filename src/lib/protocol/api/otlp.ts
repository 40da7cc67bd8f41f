import { type Static, Type } from "@sinclair/typebox";
import { Empty, Id } from "./common.ts";

/** The 403 text for a namespace's export settings: only its admins see or change them (they hold a collector's keys). */
export const otlpForbiddenText = "You do not have permissions to manage the OpenTelemetry export of this namespace.";

export const OtlpProtocol = Type.Union([Type.Literal("http/protobuf"), Type.Literal("http/json")]);
export type OtlpProtocol = Static<typeof OtlpProtocol>;

export const otlpLimits = { maxEndpointLength: 2048, maxHeaders: 16, maxHeaderNameLength: 128, maxHeaderValueLength: 4096 } as const;

/** A namespace's own collector. Header values are never sent back: their names only. */
export const OtlpSettings = Type.Object({
  endpoint: Type.String(),
  protocol: OtlpProtocol,
  isEnabled: Type.Boolean(),
  headerNames: Type.Array(Type.String()),
  /** False when the stored headers can no longer be read (SESSION_SECRET changed): enter them again. */
  areHeadersReadable: Type.Boolean(),
  updateTime: Type.String(),
  updatedByEmail: Type.Union([Type.String(), Type.Null()]),
});
export type OtlpSettings = Static<typeof OtlpSettings>;

/** What this server node exported for the namespace since it started (each node of a cluster counts its own). */
export const OtlpStats = Type.Object({
  queued: Type.Number(),
  exported: Type.Number(),
  /** Spans dropped because the queue was full (the collector slower than the traffic, or away for long). */
  dropped: Type.Number(),
  /** Spans given up on: the collector refused them, or kept failing past the retries. */
  failed: Type.Number(),
  /** Spans a collector accepted the request of but said it rejected (partial success). */
  rejected: Type.Number(),
  lastExportTime: Type.Union([Type.String(), Type.Null()]),
  lastError: Type.Union([Type.Object({ time: Type.String(), message: Type.String() }), Type.Null()]),
});
export type OtlpStats = Static<typeof OtlpStats>;

export const GetOtlpExportRequest = Type.Object({ namespaceId: Id });
export type GetOtlpExportRequest = Static<typeof GetOtlpExportRequest>;

/**
 * `settings`: the namespace's own (null: none). `serverDefault`: the server-wide collector (OTEL_EXPORTER_OTLP_*), shown
 * without its headers or any userinfo. `destination`: where spans go now.
 */
export const OtlpExportResponse = Type.Object({
  settings: Type.Union([OtlpSettings, Type.Null()]),
  serverDefault: Type.Union([Type.Object({ endpoint: Type.String(), protocol: OtlpProtocol }), Type.Null()]),
  destination: Type.Union([Type.Literal("namespace"), Type.Literal("server"), Type.Literal("none")]),
  stats: OtlpStats,
});
export type OtlpExportResponse = Static<typeof OtlpExportResponse>;

export const OtlpHeader = Type.Object({
  name: Type.String({ minLength: 1, maxLength: otlpLimits.maxHeaderNameLength }),
  value: Type.String({ maxLength: otlpLimits.maxHeaderValueLength }),
});
export type OtlpHeader = Static<typeof OtlpHeader>;

/** `headers` absent: the stored ones stay; present: they replace them all (an empty list removes them). */
export const SaveOtlpExportRequest = Type.Object({
  namespaceId: Id,
  endpoint: Type.String({ maxLength: otlpLimits.maxEndpointLength }),
  protocol: OtlpProtocol,
  isEnabled: Type.Boolean(),
  headers: Type.Optional(Type.Array(OtlpHeader, { maxItems: otlpLimits.maxHeaders })),
});
export type SaveOtlpExportRequest = Static<typeof SaveOtlpExportRequest>;

/** Removes the namespace's own settings: the server-wide collector (if any) applies again. */
export const DeleteOtlpExportRequest = Type.Object({ namespaceId: Id });
export type DeleteOtlpExportRequest = Static<typeof DeleteOtlpExportRequest>;
export const DeleteOtlpExportResponse = Empty;
export type DeleteOtlpExportResponse = Static<typeof DeleteOtlpExportResponse>;

export const SendOtlpTestSpanRequest = Type.Object({ namespaceId: Id });
export type SendOtlpTestSpanRequest = Static<typeof SendOtlpTestSpanRequest>;
/** What the collector answered a request holding one span (status null: no HTTP answer). */
export const SendOtlpTestSpanResponse = Type.Object({
  isOk: Type.Boolean(),
  status: Type.Union([Type.Number(), Type.Null()]),
  message: Type.String(),
  endpoint: Type.String(),
  traceId: Type.String(),
  durationMs: Type.Number(),
});
export type SendOtlpTestSpanResponse = Static<typeof SendOtlpTestSpanResponse>;
