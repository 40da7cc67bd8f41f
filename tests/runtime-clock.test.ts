import { afterAll, beforeAll, expect, test } from "bun:test";
import { startTestApp, type TestApp } from "./support/app.ts";
import { sampleEvent } from "./support/publish-server.ts";

// The runtime's clock reaches the engines that decide by time: a test that holds the clock still, or moves it, sees
// them follow it rather than the machine's.
let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ backend: "pglite", env: { INGEST_RATE_LIMIT: "1" } });
}, 60_000);
afterAll(() => t?.close());

const message = (seq: number, n: number) => JSON.stringify({ type: "events", seq, events: Array.from({ length: n }, () => sampleEvent()) });

test("a namespace's ingest rate limit refills by the runtime's clock: nothing while it stands still, five seconds' worth when moved on", async () => {
  const target = { namespaceId: crypto.randomUUID(), linkId: null };
  const ack = (seq: number, n: number) => {
    const reply = t.runtime.ingest.handle(target, message(seq, n));
    if (reply.type !== "ack") throw new Error(`not an ack: ${JSON.stringify(reply)}`);
    return reply;
  };
  // One a second, ten at once.
  expect(ack(1, 15)).toMatchObject({ accepted: 10, rateLimited: 5 });
  // However long the machine takes meanwhile, the runtime's clock has not moved.
  await Bun.sleep(1_100);
  expect(ack(2, 5)).toMatchObject({ accepted: 0, rateLimited: 5 });
  t.clock.advance(5_000);
  expect(ack(3, 10)).toMatchObject({ accepted: 5, rateLimited: 5 });
});
