import { describe, expect, test } from "bun:test";
import { PublisherCounters } from "~/agent/publisher/counters.ts";

const ack = (seq: number, accepted: number, refused = 0, rateLimited = 0, storeDropped?: number) =>
  ({ type: "ack", seq, accepted, refused, rateLimited, truncated: 0, storeDropped }) as const;

describe("PublisherCounters", () => {
  test("an ack settles its batch: accepted, refused and rate-limited counted, nothing left in flight", () => {
    const counters = new PublisherCounters();
    counters.dispatched(1, 10);
    counters.dispatched(2, 5);
    expect(counters.inFlightBatches).toBe(2);
    expect(counters.inFlightEvents()).toBe(15);
    counters.acked(ack(1, 7, 2, 1));
    expect(counters).toMatchObject({ sent: 7, refused: 2, rateLimited: 1, dropped: 0 });
    expect(counters.inFlightBatches).toBe(1);
    expect(counters.inFlightEvents()).toBe(5);
  });

  test("events the server's ack does not account for are dropped", () => {
    const counters = new PublisherCounters();
    counters.dispatched(1, 10);
    counters.acked(ack(1, 6));
    expect(counters.dropped).toBe(4);
    // An ack for a batch never sent (or already settled) counts what it says and invents no drops.
    counters.acked(ack(9, 3));
    expect(counters.sent).toBe(9);
    expect(counters.dropped).toBe(4);
  });

  test("storeDropped counts accepted events the server did not store, besides sent", () => {
    const counters = new PublisherCounters();
    counters.dispatched(1, 4);
    counters.acked(ack(1, 4, 0, 0, 3));
    expect(counters).toMatchObject({ sent: 4, storeDropped: 3, dropped: 0 });
  });

  test("a batch refused as a whole counts all its events as refused", () => {
    const counters = new PublisherCounters();
    counters.dispatched(3, 8);
    counters.refusedBatch(3);
    counters.refusedBatch(3);
    expect(counters.refused).toBe(8);
    expect(counters.inFlightBatches).toBe(0);
  });

  test("a lost connection drops every batch in flight, once", () => {
    const counters = new PublisherCounters();
    counters.dispatched(1, 2);
    counters.dispatched(2, 3);
    counters.lostInFlight();
    counters.lostInFlight();
    expect(counters.dropped).toBe(5);
    expect(counters.inFlightEvents()).toBe(0);
  });
});
