import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Ingest } from "~/engines/ingest/ingest.ts";
import { EventSinks } from "~/engines/ingest/sinks.ts";
import { OtlpExporter } from "~/engines/otlp/otlp-exporter.ts";
import { setLogSink } from "~/lib/server/logger.ts";
import type { NamespaceExport } from "~/services/otlp/export-destinations.ts";
import { tracedEvent } from "../../support/event-factory.ts";
import { type OtlpReceiver, startOtlpReceiver } from "../../support/otlp-receiver.ts";

if (!process.env.TEST_LOG) setLogSink(() => {});

/** The exporter on ingest's path: never waits on a collector, holds a bounded number of spans, counts what it drops. */
const ns = "7b0f3c1e-3a52-4d1b-9a51-2f7c8d9e0a11";

function exporterTo(url: string, options: Partial<ConstructorParameters<typeof OtlpExporter>[0]> = {}) {
  const destination: NamespaceExport = {
    namespaceId: ns,
    namespaceName: "shop",
    destination: { url, headers: [], protocol: "http/protobuf", timeoutMs: 60_000, source: "server" },
    problem: null,
  };
  return new OtlpExporter({
    config: { otlp: destination.destination ?? undefined, otlpDestinations: "any", publicUrl: "http://tapscope.test" },
    loadDestinations: async () => new Map([[ns, destination]]),
    hasNamespaceExports: async () => false,
    ...options,
  });
}

let receiver: OtlpReceiver;
beforeAll(async () => {
  receiver = await startOtlpReceiver();
});
afterAll(() => receiver.stop());

describe("OTLP exporter bounds", () => {
  test("a collector that never answers: ingest acks everything at once, the exporter holds its bound and counts the rest", async () => {
    const hanging = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Promise<Response>(() => {}) });
    const exporter = exporterTo(`http://127.0.0.1:${hanging.port}/v1/traces`, {
      batchSize: 100,
      flushIntervalMs: 10,
      maxQueuedPerNamespace: 1000,
      maxConcurrentExports: 2,
    });
    const sinks = new EventSinks();
    sinks.add(exporter);
    const ingest = new Ingest(sinks, { rateLimit: 0 });
    try {
      ingest.handle({ namespaceId: ns, linkId: null }, { type: "events", seq: 0, events: [tracedEvent()] });
      let accepted = 0;
      for (let seq = 1; seq <= 100; seq++) {
        const received = ingest.receive(
          { namespaceId: ns, linkId: null },
          { type: "events", seq, events: Array.from({ length: 100 }, () => tracedEvent()) },
        );
        // Nothing to wait for: the export is not a durable sink.
        expect(received.stored).toBeNull();
        if (received.reply.type === "ack") accepted += received.reply.accepted;
        await Bun.sleep(0);
      }
      expect(accepted).toBe(10_000);
      const stats = exporter.statsFor(ns);
      expect(stats.queued).toBeLessThanOrEqual(1000);
      expect(stats.queued + stats.dropped).toBe(10_001);
      expect(stats.exported).toBe(0);
    } finally {
      hanging.stop(true);
      await exporter.close();
    }
  }, 30_000);

  test("spans with long URLs: the queue holds the export's memory share, not a count's worth of them", async () => {
    const hanging = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Promise<Response>(() => {}) });
    const other = "0c5e7a3b-9d21-4f6e-8b4a-1e2f3a4b5c6d";
    const maxQueuedBytes = 1024 ** 2;
    const exporter = exporterTo(`http://127.0.0.1:${hanging.port}/v1/traces`, {
      batchSize: 100,
      flushIntervalMs: 10,
      maxConcurrentExports: 1,
      maxQueuedBytes,
    });
    try {
      const path = `/search?q=${"x".repeat(8000)}`;
      const total = 1000;
      for (let i = 0; i < total; i += 100) {
        exporter.accept(
          { namespaceId: ns, linkId: null },
          Array.from({ length: 100 }, () => tracedEvent({ http_req_path: path })),
        );
        await Bun.sleep(0);
      }
      const stats = exporter.statsFor(ns);
      // A namespace holds at most a quarter of the share: about 30 spans of 8 KB, where the count alone allows 1,000.
      expect(stats.queued).toBeGreaterThan(0);
      expect(stats.queued * path.length).toBeLessThanOrEqual(maxQueuedBytes / 4);
      expect(stats.queued + stats.dropped).toBe(total);
      // Another namespace still has room of its own.
      exporter.accept({ namespaceId: other, linkId: null }, [tracedEvent({ http_req_path: path })]);
      expect(exporter.statsFor(other)).toMatchObject({ queued: 1, dropped: 0 });
    } finally {
      hanging.stop(true);
      await exporter.close();
    }
  }, 30_000);

  test("a batch larger than one encoding slice arrives whole, as protobuf and as JSON", async () => {
    for (const protocol of ["http/protobuf", "http/json"] as const) {
      const destination: NamespaceExport = {
        namespaceId: ns,
        namespaceName: "shop",
        destination: { url: receiver.tracesUrl, headers: [], protocol, timeoutMs: 60_000, source: "namespace" },
        problem: null,
      };
      const exporter = new OtlpExporter({
        config: { otlp: undefined, otlpDestinations: "any", publicUrl: "http://tapscope.test" },
        loadDestinations: async () => new Map([[ns, destination]]),
        hasNamespaceExports: async () => true,
        batchSize: 500,
      });
      try {
        const events = Array.from({ length: 500 }, (_, i) => tracedEvent({ service: `svc-${i % 3}` }));
        const before = receiver.requests.length;
        exporter.accept({ namespaceId: ns, linkId: null }, events);
        await exporter.flush();
        const requests = receiver.requests.slice(before);
        expect(requests).toHaveLength(1);
        const ids = new Set(requests[0]!.spans.map((s) => s.attributes["tapscope.event_id"]));
        expect(ids.size, protocol).toBe(500);
        for (const e of events) expect(ids.has(e.event_id)).toBe(true);
      } finally {
        await exporter.close();
      }
    }
  }, 30_000);

  test("an outbound call whose request never arrives is sent after the wait, under the trace that request would start", async () => {
    const exporter = exporterTo(receiver.tracesUrl, { parentWaitMs: 200, flushIntervalMs: 20 });
    try {
      const parentId = crypto.randomUUID();
      const child = tracedEvent({ http_is_outgoing: true, parent_event_id: parentId });
      exporter.accept({ namespaceId: ns, linkId: null }, [child]);
      await Bun.sleep(100);
      expect(receiver.spans().some((s) => s.attributes["tapscope.event_id"] === child.event_id)).toBe(false);
      const [span] = await receiver.waitForSpans(1, 10_000, (s) => s.attributes["tapscope.event_id"] === child.event_id);
      expect(span!.traceId).toBe(parentId.replaceAll("-", ""));
      expect(span!.parentSpanId).toMatch(/^[0-9a-f]{16}$/);
    } finally {
      await exporter.close();
    }
  }, 30_000);

  test("a collector away for good: the batch is retried with backoff, then given up and counted as failed", async () => {
    const closed = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
    const port = closed.port;
    closed.stop(true);
    const exporter = exporterTo(`http://127.0.0.1:${port}/v1/traces`, { retryForMs: 300, flushIntervalMs: 10 });
    try {
      exporter.accept({ namespaceId: ns, linkId: null }, [tracedEvent(), tracedEvent()]);
      await exporter.flush();
      const stats = exporter.statsFor(ns);
      expect(stats).toMatchObject({ exported: 0, failed: 2, queued: 0 });
      expect(stats.lastError?.message).toStartWith("could not connect");
    } finally {
      await exporter.close();
    }
  }, 30_000);
});
