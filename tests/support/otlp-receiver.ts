import { decodeExportRequest, encodeExportResponse } from "~/services/otlp/otlp-http.ts";

/**
 * A stand-in OpenTelemetry collector: an OTLP/HTTP traces receiver on a loopback port that decodes each request with the
 * generated code of the official opentelemetry-proto definitions (protobuf) or reads OTLP/JSON, and keeps what came.
 * A real collector is a third-party service the tests cannot run; this one speaks its protocol on the wire.
 */
export type ReceivedSpan = {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  traceState: string;
  name: string;
  kind: number;
  startTimeUnixNano: string;
  endTimeUnixNano: string;
  attributes: Record<string, string | number | boolean>;
  status: { code: number; message: string };
  resource: Record<string, string | number | boolean>;
  scope: string;
};

export type ReceivedRequest = { path: string; contentType: string; headers: Headers; spans: ReceivedSpan[] };

type Answer = { status: number; body?: string | Uint8Array; contentType?: string; headers?: Record<string, string> };

const hexOf = (v: unknown, isJson: boolean) => (typeof v === "string" && v ? (isJson ? v : Buffer.from(v, "base64").toString("hex")) : "");

function attributeValue(v: Record<string, unknown> | undefined): string | number | boolean {
  if (!v) return "";
  if ("stringValue" in v) return String(v.stringValue);
  if ("intValue" in v) return Number(v.intValue);
  if ("boolValue" in v) return Boolean(v.boolValue);
  if ("doubleValue" in v) return Number(v.doubleValue);
  return JSON.stringify(v);
}

function attributesOf(list: Array<{ key: string; value: Record<string, unknown> }> | undefined): Record<string, string | number | boolean> {
  const out: Record<string, string | number | boolean> = {};
  for (const kv of list ?? []) out[kv.key] = attributeValue(kv.value);
  return out;
}

export async function startOtlpReceiver() {
  const requests: ReceivedRequest[] = [];
  /** Answers to give, in order; once used up, 200 with an empty ExportTraceServiceResponse. */
  const answers: Answer[] = [];
  let attempts = 0;
  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    fetch: async (req) => {
      const url = new URL(req.url);
      attempts++;
      const bytes = new Uint8Array(await req.arrayBuffer());
      const contentType = req.headers.get("content-type") ?? "";
      const isJson = contentType.includes("json");
      const decoded = isJson ? JSON.parse(new TextDecoder().decode(bytes)) : decodeExportRequest(bytes);
      const spans: ReceivedSpan[] = [];
      for (const rs of decoded.resourceSpans ?? []) {
        const resource = attributesOf(rs.resource?.attributes);
        for (const ss of rs.scopeSpans ?? []) {
          for (const s of ss.spans ?? []) {
            spans.push({
              traceId: hexOf(s.traceId, isJson),
              spanId: hexOf(s.spanId, isJson),
              parentSpanId: hexOf(s.parentSpanId, isJson),
              traceState: String(s.traceState ?? ""),
              name: String(s.name ?? ""),
              kind: Number(s.kind ?? 0),
              startTimeUnixNano: String(s.startTimeUnixNano ?? ""),
              endTimeUnixNano: String(s.endTimeUnixNano ?? ""),
              attributes: attributesOf(s.attributes as Array<{ key: string; value: Record<string, unknown> }>),
              status: {
                code: Number((s.status as { code?: unknown } | undefined)?.code ?? 0),
                message: String((s.status as { message?: unknown } | undefined)?.message ?? ""),
              },
              resource,
              scope: String(ss.scope?.name ?? ""),
            });
          }
        }
      }
      const answer = answers.shift();
      if (answer && answer.status !== 200) {
        return new Response(answer.body as BodyInit | undefined, {
          status: answer.status,
          headers: { "content-type": answer.contentType ?? "text/plain", ...answer.headers },
        });
      }
      requests.push({ path: url.pathname, contentType, headers: req.headers, spans });
      if (answer?.body !== undefined) {
        return new Response(answer.body as BodyInit, { headers: { "content-type": answer.contentType ?? "application/x-protobuf" } });
      }
      return new Response(isJson ? "{}" : (encodeExportResponse() as Uint8Array<ArrayBuffer>), {
        headers: { "content-type": isJson ? "application/json" : "application/x-protobuf" },
      });
    },
  });
  const base = `http://127.0.0.1:${server.port}`;
  return {
    base,
    tracesUrl: `${base}/v1/traces`,
    requests,
    /** Every span received (by accepted requests), in order. */
    spans: () => requests.flatMap((r) => r.spans),
    /** How many requests arrived, answered or refused. */
    attempts: () => attempts,
    answerNext: (...next: Answer[]) => answers.push(...next),
    waitForSpans: async (count: number, timeoutMs = 20_000, filter: (s: ReceivedSpan) => boolean = () => true) => {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const found = requests.flatMap((r) => r.spans).filter(filter);
        if (found.length >= count) return found;
        if (Date.now() > deadline) throw new Error(`the receiver got ${found.length} of ${count} spans`);
        await Bun.sleep(20);
      }
    },
    stop: () => server.stop(true),
  };
}

export type OtlpReceiver = Awaited<ReturnType<typeof startOtlpReceiver>>;
