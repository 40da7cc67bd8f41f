import { describe, expect, test } from "bun:test";
import type { EncodedEvents } from "~/agent/publish.ts";
import { FrameGatherer } from "~/agent/publisher/frame-gatherer.ts";
import { readEventBatch, setEventBatchSeq } from "~/lib/protocol/event-batch.ts";
import { sampleEvent } from "../../support/publish-server.ts";

const limits = { maxEvents: 1000, maxExpandedChars: 1 << 30 };

/** The request paths of a frame, as the server reads them. */
function paths(frame: Uint8Array): string[] {
  setEventBatchSeq(frame, 1);
  const batch = readEventBatch(frame, limits);
  if ("error" in batch) throw new Error(batch.message);
  const column = batch.columns.get("http_req_path");
  if (column?.kind !== "str") throw new Error("no path column");
  return Array.from(column.index, (i) => batch.strings[i]!);
}

const event = (path: string, body = new Uint8Array(0)) => ({ ...sampleEvent({ http_req_path: path }), http_resp_body: body });

describe("FrameGatherer: events encoded as they come, handed on as publish frames", () => {
  test("a frame per maxEvents events, in order, each counted", () => {
    const frames: EncodedEvents[] = [];
    const gatherer = new FrameGatherer((f) => frames.push(f), { maxEvents: 3, maxBytes: 1 << 20, intervalMs: 60_000 });
    for (let i = 0; i < 7; i++) gatherer.add(event(`/${i}`));
    expect(frames.map((f) => f.count)).toEqual([3, 3]);
    expect(gatherer.count).toBe(1);
    gatherer.flush();
    expect(frames.map((f) => paths(f.frame))).toEqual([["/0", "/1", "/2"], ["/3", "/4", "/5"], ["/6"]]);
    gatherer.flush();
    expect(frames).toHaveLength(3);
  });

  test("by size: a large event closes the frame before it and goes alone", () => {
    const frames: EncodedEvents[] = [];
    const gatherer = new FrameGatherer((f) => frames.push(f), { maxEvents: 500, maxBytes: 64 * 1024, intervalMs: 60_000 });
    gatherer.add(event("/small-1"));
    gatherer.add(event("/small-2"));
    gatherer.add(event("/large", new Uint8Array(80 * 1024).fill(97)));
    expect(frames.map((f) => paths(f.frame))).toEqual([["/small-1", "/small-2"], ["/large"]]);
    expect(gatherer.count).toBe(0);
  });

  test("by time: what was added goes out after the interval without more events", async () => {
    const frames: EncodedEvents[] = [];
    const gatherer = new FrameGatherer((f) => frames.push(f), { maxEvents: 500, maxBytes: 1 << 20, intervalMs: 20 });
    gatherer.add(event("/a"));
    gatherer.add(event("/b"));
    expect(frames).toHaveLength(0);
    const deadline = Date.now() + 5000;
    while (frames.length === 0 && Date.now() < deadline) await Bun.sleep(10);
    expect(frames.map((f) => paths(f.frame))).toEqual([["/a", "/b"]]);
  });
});
