import { expect, test } from "bun:test";
import { AppError } from "~/lib/errors.ts";
import { harEntryText, inWriteOrder } from "~/lib/har.ts";
import type { TracedEvent } from "~/lib/protocol/event.ts";
import { encodeResult, encodeResultData, errorResult, type TunnelResultData } from "~/lib/protocol/tunnel.ts";
import { writeHarEntries } from "~/services/tunnel/har-writer.ts";
import { tracedEvent as makeEvent } from "../../support/event-factory.ts";

/** The HAR writer's thread: a tunnel reply's events in, their HAR entries as text out, nothing decoded on the event loop. */
const T0 = Date.UTC(2026, 10, 20, 12, 0, 0) * 1000;

async function reply(events: TracedEvent[], extra: Partial<TunnelResultData> = {}): Promise<Uint8Array> {
  const data: TunnelResultData = {
    meta: [],
    data: events as unknown as Record<string, unknown>[],
    rows_before_limit_at_least: events.length,
    wasRowLimitExceeded: false,
    actualNumberOfRows: events.length,
    durationInNanoseconds: 0,
    ...extra,
  };
  return encodeResult({
    queryId: "q",
    tunnelError: null,
    databaseError: null,
    databaseQueryId: null,
    compression: "none",
    data: await encodeResultData("none", data),
  });
}

const decoder = new TextDecoder();
const texts = (list: Uint8Array[]) => list.map((t) => decoder.decode(t));

test("a page's entries in the order a HAR writes them (by time, ties in the page's order), and the frame's bytes are moved, not copied", async () => {
  const a = makeEvent({ time: T0 + 2000, http_req_path: "/a", http_resp_body: btoa("\u0000\u0001binary") });
  const b = makeEvent({ time: T0 + 1000, http_req_path: "/b" });
  const c = makeEvent({ time: T0 + 2000, http_req_path: "/c", http_resp_body: btoa("text"), http_resp_content_type: "text/plain" });
  const tcp = makeEvent({ time: T0, protocol: "tcp" });
  const frame = await reply([c, tcp, a, b]);
  const written = await writeHarEntries({ frame, ids: [a.event_id, b.event_id, c.event_id, tcp.event_id] });
  expect(frame.byteLength).toBe(0);
  expect(written.isFound).toBe(true);
  expect(texts(written.texts)).toEqual(texts(inWriteOrder([a, b, c, tcp]).map((e) => harEntryText(e))));
  expect(texts(written.texts).map((t) => new URL(JSON.parse(t.slice(1)).request.url).pathname)).toEqual(["/b", "/a", "/c"]);
});

test("one request with its outbound calls; a request not found says so", async () => {
  const parent = makeEvent({ time: T0 + 10, http_req_path: "/checkout" });
  const child = makeEvent({ time: T0 + 20, parent_event_id: parent.event_id, http_req_path: "/charge" });
  const found = await writeHarEntries({ frame: await reply([parent], { children: [child] }) });
  expect(texts(found.texts)).toEqual(texts([parent, child].map((event) => harEntryText({ event }))));
  expect(await writeHarEntries({ frame: await reply([]) })).toEqual({ texts: [], isFound: false });
});

async function failure(frame: Uint8Array): Promise<{ code?: string; message: string }> {
  try {
    await writeHarEntries({ frame });
  } catch (err) {
    return { code: err instanceof AppError ? err.code : undefined, message: (err as Error).message };
  }
  throw new Error("no error");
}

test("the tunnel's errors become the errors a query gets; a frame that is a view keeps the rest of its buffer", async () => {
  expect(await failure(encodeResult(errorResult("q", { tunnelError: "the org's worker is not connected" })))).toEqual({
    code: "UNAVAILABLE",
    message: "the org's worker is not connected",
  });
  expect(await failure(encodeResult(errorResult("q", { databaseError: "query timed out" })))).toEqual({
    code: "BAD_REQUEST",
    message: "query timed out",
  });
  expect(await failure(new Uint8Array([1, 2, 3]))).toEqual({ code: undefined, message: "not a tunnel message" });
  const frame = await reply([makeEvent({ time: T0 })]);
  const larger = new Uint8Array(frame.length + 4);
  larger.set(frame, 2);
  expect((await writeHarEntries({ frame: larger.subarray(2, 2 + frame.length) })).texts).toHaveLength(1);
  expect(larger.byteLength).toBe(frame.length + 4);
});
