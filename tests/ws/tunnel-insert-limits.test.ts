import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { TunnelClient } from "~/agent/query-client.ts";
import type { TracedEvent } from "~/lib/protocol/event.ts";
import { publishLimits } from "~/lib/protocol/publish.ts";
import type { QueryFilter } from "~/lib/protocol/query.ts";
import { encodeRequest } from "~/lib/protocol/tunnel.ts";
import { tracedEvent as makeEvent } from "../support/event-factory.ts";
import { startTunnelServer, type TunnelServer } from "../support/tunnel-server.ts";

const RATE = 1;
/** What a namespace may send at once: ten seconds' worth (src/lib/rate-limit.ts). */
const BURST = RATE * 10;

describe("INSERT tunnels are held to the limits of publishing (issue 14 item 6)", () => {
  let s: TunnelServer;
  let owner: Awaited<ReturnType<TunnelServer["onboardedUser"]>>;
  const now = Date.now();
  const filter: QueryFilter = { clauses: [], global: { lowerMs: now - 3_600_000, upperMs: now + 60_000 } };
  const event = (path: string): TracedEvent => makeEvent({ time: now * 1000, http_req_path: path });
  const stored = async (prefix: string) =>
    (await s.store!.queryRows(owner.namespaceId, { filter, limit: 10_000 })).data.filter((row) =>
      String(row.http_req_path).startsWith(prefix),
    );

  beforeAll(async () => {
    s = await startTunnelServer({ env: { INGEST_RATE_LIMIT: String(RATE) } });
    owner = await s.onboardedUser();
  }, 60_000);
  afterAll(async () => {
    await s?.close();
  });

  const open = () =>
    TunnelClient.open({
      endpoint: s.base,
      headers: { cookie: owner.cookie, origin: s.base },
      namespaceId: owner.namespaceId,
      role: "INSERT",
    });

  test("a message over the per-message event cap is refused whole; nothing of it is stored", async () => {
    const ins = await open();
    const events = Array.from({ length: publishLimits.maxEventsPerMessage + 1 }, (_, i) => event(`/cap/${i}`));
    const result = await ins.send({ kind: "insert", events });
    expect(result.tunnelError).toBe(`at most ${publishLimits.maxEventsPerMessage} events per message`);
    await s.flush();
    expect(await stored("/cap/")).toHaveLength(0);
    ins.close();
  });

  test("a message over the byte cap, as sent or once decompressed, is refused before it is parsed", async () => {
    const ins = await open();
    const big = [event(`/big/${"x".repeat(publishLimits.maxMessageBytes)}`)];
    const plain = await ins.send({ kind: "insert", events: big });
    expect(plain.tunnelError).toBe("tunnel data too large");
    // Gzip makes the repeated path small on the wire; decompressed it is still over the cap.
    const frame = await encodeRequest({ queryId: "zipped", tags: {}, compression: "none", want: { kind: "insert", events: big } }, "gzip");
    expect(frame.length).toBeLessThan(publishLimits.maxMessageBytes / 10);
    const zipped = await ins.sendFrame(frame, "zipped");
    expect(zipped.tunnelError).toBe("tunnel data too large");
    await s.flush();
    expect(await stored("/big/")).toHaveLength(0);
    ins.close();
  });

  test("over the namespace's ingest rate limit events are dropped and the reply says how many", async () => {
    const ins = await open();
    const events = Array.from({ length: BURST + 30 }, (_, i) => event(`/rate/${i}`));
    const first = await ins.query({ kind: "insert", events });
    expect(first.data).toEqual([{ inserted: BURST, refused: 0, rateLimited: 30, truncated: 0, storeDropped: 0 }]);
    // The bucket is empty now: the next message is dropped whole (less what refilled meanwhile).
    const second = await ins.query({ kind: "insert", events: events.slice(0, 20) });
    const row = second.data[0] as { inserted: number; rateLimited: number };
    expect(row.rateLimited).toBeGreaterThanOrEqual(20 - RATE * 10);
    expect(row.inserted + row.rateLimited).toBe(20);
    expect(await stored("/rate/")).toHaveLength(BURST + row.inserted);
    ins.close();
  });
});
