import { expect, test } from "bun:test";
import { harEntryText, harStream, inWriteOrder } from "~/lib/har.ts";
import type { TracedEvent } from "~/lib/protocol/event.ts";
import { tracedEvent as makeEvent } from "../support/event-factory.ts";

const T0 = Date.UTC(2026, 10, 20, 12, 0, 0) * 1000;
const http = (i: number, overrides: Partial<TracedEvent> = {}) =>
  makeEvent({
    time: T0 + i * 1000,
    http_req_path: `/r/${i}`,
    http_resp_body: btoa(`body ${i} é`),
    http_resp_content_type: "text/plain",
    ...overrides,
  });
const tcp = (i: number) => makeEvent({ time: T0 + i * 1000, protocol: "tcp", http_req_path: "" });

async function served(stream: ReadableStream<Uint8Array>): Promise<string> {
  const server = Bun.serve({ port: 0, fetch: () => new Response(stream) });
  try {
    const res = await fetch(`http://127.0.0.1:${server.port}/`, { signal: AbortSignal.timeout(5000) });
    return await res.text();
  } finally {
    server.stop(true);
  }
}

test("pages without HTTP entries (connections of other protocols) do not stall the download", async () => {
  // A pull that enqueues nothing is never followed by another on Bun's response body: the download stopped there
  // until the server's idle timeout cut it.
  const pages = [[tcp(0), tcp(1)], [tcp(2)], [http(3)], [tcp(4)]];
  const har = JSON.parse(await served(harStream(pages.values())));
  expect(har.log.entries.map((e: { request: { url: string } }) => new URL(e.request.url).pathname)).toEqual(["/r/3"]);
});

test("entries already written as text (harEntryText, as the HAR writer's thread does) give the same HAR as the events", async () => {
  const pages = [
    [
      http(2),
      tcp(1),
      http(0, { http_req_method: "POST", http_req_body: btoa("a=1&b=x+y"), http_req_content_type: "application/x-www-form-urlencoded" }),
    ],
    [http(3)],
    [tcp(4)],
    [http(5)],
  ];
  const asText = pages.map((page) => ({ texts: inWriteOrder(page).map((e) => harEntryText(e)) }));
  for (const maxBytes of [undefined, 2500]) {
    const fromEvents = await new Response(harStream(pages.values(), { maxBytes, total: 6 })).text();
    const fromTexts = await new Response(harStream(asText.values(), { maxBytes, total: 6 })).text();
    expect(fromTexts).toBe(fromEvents);
    expect(JSON.parse(fromTexts).log.entries.length).toBeGreaterThan(0);
  }
  expect(JSON.parse(await new Response(harStream(asText.values(), { maxBytes: 2500 })).text()).log.comment).toStartWith("truncated:");
});
