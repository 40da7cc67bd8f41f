import { describe, expect, test } from "bun:test";
import { FilterAllowance } from "~/engines/live/filter-allowance.ts";
import { LiveHub } from "~/engines/live/hub.ts";
import type { LiveHubOptions } from "~/engines/live/options.ts";
import { SendBudget } from "~/engines/live/send-budget.ts";
import type { SubscriberTransport } from "~/engines/live/subscriber.ts";
import { compileFilterChips } from "~/lib/filter/evaluate.ts";
import type { TracedEvent } from "~/lib/protocol/event.ts";
import { estimateJsonLength } from "~/lib/protocol/event-size.ts";
import type { LiveServerMessage } from "~/lib/protocol/live.ts";
import { tracedEvent as makeEvent } from "../../support/event-factory.ts";
import { rng } from "../../support/rng.ts";

/** A socket stand-in with Bun's send semantics and a buffer the test can fill (a slow reader). */
class TestSocket implements SubscriberTransport {
  messages: LiveServerMessage[] = [];
  buffered = 0;
  isStalled = false;
  closed: { code?: number; reason?: string } | null = null;
  isTerminated = false;
  send(data: string): number {
    if (this.isStalled) {
      this.buffered += data.length;
      return -1;
    }
    this.messages.push(JSON.parse(data));
    return data.length;
  }
  bufferedAmount(): number {
    return this.buffered;
  }
  close(code?: number, reason?: string): void {
    this.closed = { code, reason };
  }
  terminate(): void {
    this.isTerminated = true;
  }
  /** The reader catches up. */
  unstall(): void {
    this.isStalled = false;
    this.buffered = 0;
  }
  of<T extends LiveServerMessage["type"]>(type: T): Extract<LiveServerMessage, { type: T }>[] {
    return this.messages.filter((m): m is Extract<LiveServerMessage, { type: T }> => m.type === type);
  }
  paths(): string[] {
    return this.of("events").flatMap((m) => m.events.map((e) => e.http_req_path));
  }
}

function hubWith(options: Partial<LiveHubOptions> = {}) {
  return new LiveHub({ flushIntervalMs: 1, ...options });
}

const ns = (id: string) => ({ kind: "namespace" as const, namespaceId: id });
const link = (id: string) => ({ kind: "link" as const, linkId: id });
const noExpiry = { expiresAt: null };
/** A viewer from its own client address (each address has its own share of the filter allowance). */
const from = (address: string) => ({ expiresAt: null, address });

describe("LiveHub", () => {
  test("a subscriber gets hello, stats and (empty) history on join, then batched events", () => {
    const hub = hubWith();
    const s = new TestSocket();
    hub.subscribe(ns("a"), s, noExpiry);
    expect(s.messages.map((m) => m.type)).toEqual(["hello", "stats", "history"]);
    expect(s.of("stats")[0]).toEqual({ type: "stats", numPublishers: 0, numSubscribers: 1 });
    hub.accept({ namespaceId: "a", linkId: null }, [makeEvent({ http_req_path: "/1" }), makeEvent({ http_req_path: "/2" })]);
    hub.flushAll();
    expect(s.of("events")).toHaveLength(1);
    expect(s.paths()).toEqual(["/1", "/2"]);
  });

  test("filters are applied on the server, with the revision echoed", () => {
    const hub = hubWith();
    const s = new TestSocket();
    const sub = hub.subscribe(ns("a"), s, noExpiry);
    sub.setConfig({ type: "setConfig", revision: 7, filters: ['request.method == "POST"', "response.status >= 500"] });
    expect(s.of("config-applied")).toEqual([{ type: "config-applied", revision: 7 }]);
    hub.accept({ namespaceId: "a", linkId: null }, [
      makeEvent({ http_req_method: "POST", http_resp_status_code: 503, http_req_path: "/match" }),
      makeEvent({ http_req_method: "POST", http_resp_status_code: 200, http_req_path: "/ok" }),
      makeEvent({ http_req_method: "GET", http_resp_status_code: 500, http_req_path: "/get" }),
    ]);
    hub.flushAll();
    expect(s.paths()).toEqual(["/match"]);
  });

  test("a bad filter gets setFilterError with message, position and chip index; the old config stays", () => {
    const hub = hubWith();
    const s = new TestSocket();
    const sub = hub.subscribe(ns("a"), s, noExpiry);
    sub.setConfig({ type: "setConfig", revision: 1, filters: ['request.method == "GET"'] });
    sub.setConfig({ type: "setConfig", revision: 2, filters: ['request.method == "GET"', "duration contains 5"] });
    expect(s.of("setFilterError")).toEqual([
      { type: "setFilterError", revision: 2, index: 1, position: 9, message: expect.stringContaining("duration") },
    ]);
    expect(s.of("config-applied").map((m) => m.revision)).toEqual([1]);
    hub.accept({ namespaceId: "a", linkId: null }, [
      makeEvent({ http_req_method: "GET", http_req_path: "/g" }),
      makeEvent({ http_req_method: "PUT" }),
    ]);
    hub.flushAll();
    expect(s.paths()).toEqual(["/g"]);
  });

  test("namespaces and links are isolated from each other", () => {
    const hub = hubWith();
    const a = new TestSocket();
    const b = new TestSocket();
    const l1 = new TestSocket();
    const l2 = new TestSocket();
    hub.subscribe(ns("a"), a, noExpiry);
    hub.subscribe(ns("b"), b, noExpiry);
    hub.subscribe(link("L1"), l1, noExpiry);
    hub.subscribe(link("L2"), l2, noExpiry);
    hub.accept({ namespaceId: "a", linkId: null }, [makeEvent({ http_req_path: "/a" })]);
    hub.accept({ namespaceId: null, linkId: "L1" }, [makeEvent({ http_req_path: "/l1" })]);
    // A run with a token that also asked for a link: its namespace and its link see it, nobody else.
    hub.accept({ namespaceId: "b", linkId: "L2" }, [makeEvent({ http_req_path: "/b-and-l2" })]);
    hub.flushAll();
    expect(a.paths()).toEqual(["/a"]);
    expect(b.paths()).toEqual(["/b-and-l2"]);
    expect(l1.paths()).toEqual(["/l1"]);
    expect(l2.paths()).toEqual(["/b-and-l2"]);
  });

  test("stats announce publishers and subscribers on every change, per channel", () => {
    const hub = hubWith();
    const s = new TestSocket();
    const other = new TestSocket();
    hub.subscribe(ns("a"), s, noExpiry);
    hub.subscribe(ns("b"), other, noExpiry);
    hub.publisherConnected({ namespaceId: "a", linkId: null });
    hub.publisherConnected({ namespaceId: "a", linkId: null });
    const second = hub.subscribe(ns("a"), new TestSocket(), noExpiry);
    second.close();
    hub.publisherDisconnected({ namespaceId: "a", linkId: null });
    expect(s.of("stats").map((m) => [m.numPublishers, m.numSubscribers])).toEqual([
      [0, 1],
      [1, 1],
      [2, 1],
      [2, 2],
      [2, 1],
      [1, 1],
    ]);
    expect(other.of("stats").map((m) => [m.numPublishers, m.numSubscribers])).toEqual([[0, 1]]);
    expect(hub.stats(ns("a"))).toEqual({ numPublishers: 1, numSubscribers: 1 });
    // A disconnect without a connect never goes negative.
    hub.publisherDisconnected({ namespaceId: "z", linkId: null });
    expect(hub.stats(ns("z")).numPublishers).toBe(0);
  });

  test("a late link viewer sees the last 1000 events, filtered by its config", () => {
    const hub = hubWith();
    const events = Array.from({ length: 1500 }, (_, i) => makeEvent({ http_req_path: `/e${i}`, http_resp_status_code: i % 2 ? 500 : 200 }));
    hub.accept({ namespaceId: null, linkId: "L" }, events);
    const s = new TestSocket();
    const sub = hub.subscribe(link("L"), s, noExpiry);
    const [first] = s.of("history");
    expect(first!.events).toHaveLength(1000);
    expect(first!.events[0]!.http_req_path).toBe("/e500");
    expect(first!.events.at(-1)!.http_req_path).toBe("/e1499");
    sub.setConfig({ type: "setConfig", revision: 3, filters: ["response.status == 500"] });
    const second = s.of("history")[1]!;
    expect(second.revision).toBe(3);
    expect(second.events).toHaveLength(500);
    expect(second.events.every((e) => e.http_resp_status_code === 500)).toBe(true);
    // Another link's viewer sees none of it.
    const other = new TestSocket();
    hub.subscribe(link("M"), other, noExpiry);
    expect(other.of("history")[0]!.events).toEqual([]);
  });

  test("a slow subscriber drops (and is told), without slowing the publisher or the others", () => {
    const hub = hubWith({ queueLimit: 100, maxBufferedBytes: 1000, maxBatch: 50 });
    const slow = new TestSocket();
    const fast = new TestSocket();
    hub.subscribe(ns("a"), slow, noExpiry);
    hub.subscribe(ns("a"), fast, noExpiry);
    slow.isStalled = true;
    slow.buffered = 10_000;
    const t0 = performance.now();
    for (let i = 0; i < 1000; i++) hub.accept({ namespaceId: "a", linkId: null }, [makeEvent({ http_req_path: `/${i}` })]);
    hub.flushAll();
    expect(performance.now() - t0).toBeLessThan(2000);
    expect(fast.paths()).toHaveLength(1000);
    expect(fast.of("dropped")).toEqual([]);
    // The slow one catches up: it is told how many it missed, then gets the newest 100.
    slow.unstall();
    hub.flushAll();
    const dropped = slow.of("dropped");
    expect(dropped).toEqual([{ type: "dropped", count: 900, total: 900 }]);
    expect(slow.paths()).toEqual(Array.from({ length: 100 }, (_, i) => `/${900 + i}`));
  });

  test("viewers with the same filters share batches only when they were sent the same events", () => {
    const hub = hubWith({ maxBufferedBytes: 10 });
    const [a, b, c] = [new TestSocket(), new TestSocket(), new TestSocket()];
    for (const s of [a, b, c])
      hub.subscribe(ns("n"), s, noExpiry).setConfig({ type: "setConfig", revision: 1, filters: ['request.method == "GET"'] });
    b.isStalled = true;
    b.buffered = 100;
    hub.accept({ namespaceId: "n", linkId: null }, [makeEvent({ http_req_path: "/1" }), makeEvent({ http_req_method: "POST" })]);
    hub.flushAll();
    b.unstall();
    hub.accept({ namespaceId: "n", linkId: null }, [makeEvent({ http_req_path: "/2" })]);
    hub.flushAll();
    expect(a.paths()).toEqual(["/1", "/2"]);
    expect(b.paths()).toEqual(["/1", "/2"]);
    expect(c.paths()).toEqual(["/1", "/2"]);
    expect(b.of("events")).toHaveLength(1);
    expect(a.of("events")).toHaveLength(2);
  });

  test("a stalled subscriber is polled gently, not on every loop turn", async () => {
    const hub = new LiveHub({ maxBufferedBytes: 10 });
    const s = new TestSocket();
    hub.subscribe(ns("a"), s, noExpiry);
    s.isStalled = true;
    s.buffered = 100;
    let polls = 0;
    const read = s.bufferedAmount.bind(s);
    s.bufferedAmount = () => {
      polls++;
      return read();
    };
    hub.accept({ namespaceId: "a", linkId: null }, [makeEvent()]);
    await Bun.sleep(200);
    expect(polls).toBeGreaterThan(2);
    expect(polls).toBeLessThan(40);
    s.unstall();
    await Bun.sleep(60);
    expect(s.paths()).toHaveLength(1);
  });

  test("filters changed faster than the viewer reads give one history, for the latest config", () => {
    const hub = hubWith({ maxBufferedBytes: 10 });
    hub.accept({ namespaceId: "a", linkId: null }, [makeEvent({ http_resp_status_code: 200 }), makeEvent({ http_resp_status_code: 500 })]);
    const s = new TestSocket();
    const sub = hub.subscribe(ns("a"), s, noExpiry);
    s.isStalled = true;
    s.buffered = 100;
    for (let revision = 1; revision <= 5; revision++) {
      sub.setConfig({ type: "setConfig", revision, filters: [revision === 5 ? "response.status == 500" : "response.status == 200"] });
    }
    s.unstall();
    hub.flushAll();
    const histories = s.of("history");
    expect(histories).toHaveLength(2); // the one on join, and the one for revision 5
    expect(histories[1]!.revision).toBe(5);
    expect(histories[1]!.events.map((e) => e.http_resp_status_code)).toEqual([500]);
  });

  test("a channel's audience is bounded", () => {
    const hub = hubWith({ maxSubscribersPerChannel: 2 });
    hub.subscribe(link("L"), new TestSocket(), noExpiry);
    expect(hub.hasRoomFor(link("L"))).toBe(true);
    const second = hub.subscribe(link("L"), new TestSocket(), noExpiry);
    expect(hub.hasRoomFor(link("L"))).toBe(false);
    expect(hub.hasRoomFor(link("M"))).toBe(true);
    second.close();
    expect(hub.hasRoomFor(link("L"))).toBe(true);
  });

  test("viewers sharing filters are evaluated together and part cleanly when one changes or leaves", () => {
    const hub = hubWith();
    const [a, b, c] = [new TestSocket(), new TestSocket(), new TestSocket()];
    const subs = [a, b, c].map((s) => hub.subscribe(ns("n"), s, noExpiry));
    for (const sub of subs) sub.setConfig({ type: "setConfig", revision: 1, filters: ["response.status == 200"] });
    subs[1]!.setConfig({ type: "setConfig", revision: 2, filters: ["response.status == 500"] });
    subs[2]!.close();
    hub.accept({ namespaceId: "n", linkId: null }, [
      makeEvent({ http_resp_status_code: 200, http_req_path: "/ok" }),
      makeEvent({ http_resp_status_code: 500, http_req_path: "/err" }),
    ]);
    hub.flushAll();
    expect(a.paths()).toEqual(["/ok"]);
    expect(b.paths()).toEqual(["/err"]);
    expect(c.paths()).toEqual([]);
  });

  test("a send the socket drops (status 0) is counted as dropped", () => {
    const hub = hubWith();
    const s = new TestSocket();
    hub.subscribe(ns("a"), s, noExpiry);
    const realSend = s.send.bind(s);
    s.send = () => 0;
    hub.accept({ namespaceId: "a", linkId: null }, [makeEvent(), makeEvent()]);
    hub.flushAll();
    s.send = realSend;
    hub.flushAll();
    expect(s.of("dropped")).toEqual([{ type: "dropped", count: 2, total: 2 }]);
  });

  test("expired link viewers are told and closed", () => {
    const hub = hubWith();
    const s = new TestSocket();
    hub.subscribe(link("L"), s, { expiresAt: new Date(Date.now() + 1000) });
    expect(s.of("hello")[0]).toMatchObject({ channel: "link", expiresAt: expect.any(String) });
    hub.closeLink("L");
    expect(s.messages.at(-1)).toEqual({ type: "expired" });
    expect(s.closed).toEqual({ code: 4410, reason: "link expired" });
    expect(hub.stats(link("L")).numSubscribers).toBe(0);
  });

  test("history is bounded by bytes too, and idle channels give theirs up first", () => {
    const hub = hubWith({ historyBytes: 50_000, totalHistoryBytes: 120_000 });
    const big = (p: string) => makeEvent({ http_req_path: p, http_resp_body: "x".repeat(10_000) });
    hub.accept(
      { namespaceId: null, linkId: "old" },
      Array.from({ length: 10 }, (_, i) => big(`/old${i}`)),
    );
    hub.accept(
      { namespaceId: null, linkId: "mid" },
      Array.from({ length: 10 }, (_, i) => big(`/mid${i}`)),
    );
    hub.accept(
      { namespaceId: null, linkId: "new" },
      Array.from({ length: 10 }, (_, i) => big(`/new${i}`)),
    );
    const history = (id: string) => {
      const s = new TestSocket();
      hub.subscribe(link(id), s, noExpiry);
      return s.of("history")[0]!.events.length;
    };
    expect(history("new")).toBeGreaterThan(0);
    expect(history("new")).toBeLessThanOrEqual(5);
    expect(history("old")).toBe(0);
  });
});

/** Random a/b paths: `[ab]*a[ab]{n}z` must build a DFA state on nearly every character of them. */
function abPath(length: number, r: () => number): string {
  let s = "/";
  while (s.length < length) s += r() < 0.5 ? "a" : "b";
  return s;
}

/**
 * What the unbounded evaluation of `filters` over `events` costs on this machine now, in ms (the old hub's work
 * for them): the baseline a bounded run is compared with, so a busy machine slows both alike.
 */
function unboundedMs(filters: string[], events: readonly TracedEvent[]): number {
  const compiled = compileFilterChips(filters);
  if (!compiled.ok) throw new Error(compiled.error.message);
  const t0 = performance.now();
  for (const event of events) compiled.predicate(event);
  return performance.now() - t0;
}

/** Event-loop turns (a chain of setImmediate) that pass while `work` runs. */
async function loopTurnsDuring(work: () => Promise<void>): Promise<number> {
  let turns = 0;
  let isDone = false;
  const turn = () => {
    if (isDone) return;
    turns++;
    setImmediate(turn);
  };
  setImmediate(turn);
  try {
    await work();
  } finally {
    isDone = true;
  }
  return turns;
}

async function until(check: () => boolean, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(5);
  }
}

describe("filter cost", () => {
  const hostile = (n: number) => `request.url matches "[ab]*a[ab]{${n}}z"`;

  test("issue 14's reproduction: 64 OR-ed DFA-hostile clauses over 10 retained 4,200-character URLs are refused in milliseconds", () => {
    const hub = hubWith();
    const r = rng(14);
    hub.accept(
      { namespaceId: null, linkId: "L" },
      Array.from({ length: 10 }, () => makeEvent({ http_req_path: abPath(4200, r) })),
    );
    const s = new TestSocket();
    const sub = hub.subscribe(link("L"), s, noExpiry);
    sub.setConfig({ type: "setConfig", revision: 1, filters: ['request.method == "GET"'] });
    const costly = [Array.from({ length: 64 }, () => hostile(99)).join(" || ")];
    const t0 = performance.now();
    sub.setConfig({ type: "setConfig", revision: 2, filters: costly });
    const elapsed = performance.now() - t0;
    // Unbounded, the config would be read over all ten events; bounded, it stops within the first one.
    const oneEvent = unboundedMs(costly, [makeEvent({ http_req_path: abPath(4200, r) })]);
    expect(elapsed).toBeLessThan(oneEvent * 3);
    expect(s.of("setFilterError")).toEqual([
      { type: "setFilterError", revision: 2, index: 0, position: 0, message: expect.stringContaining("too costly") },
    ]);
    // The previous config stays in force.
    hub.accept({ namespaceId: null, linkId: "L" }, [
      makeEvent({ http_req_method: "GET", http_req_path: "/g" }),
      makeEvent({ http_req_method: "PUT" }),
    ]);
    hub.flushAll();
    expect(s.paths()).toEqual(["/g"]);
  });

  test("a config affordable per event but costly over the history is checked in slices, the loop keeps turning, and it is refused", async () => {
    const hub = hubWith({ filterStepsPerEvent: 1_000_000, filterHistorySteps: 2_000_000, filterSliceSteps: 50_000 });
    const r = rng(15);
    hub.accept(
      { namespaceId: null, linkId: "L" },
      Array.from({ length: 1000 }, () => makeEvent({ http_req_path: abPath(400, r) })),
    );
    const s = new TestSocket();
    const sub = hub.subscribe(link("L"), s, noExpiry);
    const turns = await loopTurnsDuring(async () => {
      sub.setConfig({ type: "setConfig", revision: 1, filters: [hostile(12)] });
      // Not decided in the message's own turn: the history is read a slice at a time.
      expect(s.of("setFilterError")).toEqual([]);
      await until(() => s.of("setFilterError").length === 1, "setFilterError");
    });
    // 2,000,000 steps in slices of 50,000: the loop turned between them, however slow the machine.
    expect(turns).toBeGreaterThanOrEqual(20);
    expect(s.of("setFilterError")[0]).toMatchObject({ revision: 1, message: expect.stringContaining("retained events") });
    expect(s.of("config-applied")).toEqual([]);
  });

  test("a costly config that fits is applied when its walk ends, with every match including events that came meanwhile", async () => {
    const hub = hubWith({ filterStepsPerEvent: 1_000_000, filterSliceSteps: 20_000 });
    const r = rng(16);
    const costly = 'request.url matches "[ab]*a[ab]{12}z" || request.url contains "match"';
    hub.accept({ namespaceId: null, linkId: "L" }, [
      ...Array.from({ length: 100 }, () => makeEvent({ http_req_path: abPath(400, r) })),
      makeEvent({ http_req_path: "/old-match" }),
    ]);
    const s = new TestSocket();
    const sub = hub.subscribe(link("L"), s, noExpiry);
    sub.setConfig({ type: "setConfig", revision: 1, filters: [costly] });
    expect(s.of("config-applied")).toEqual([]);
    // Arrives while the walk is under way: the old config (none) is still in force, so it is sent as is.
    hub.accept({ namespaceId: null, linkId: "L" }, [makeEvent({ http_req_path: "/new-match" }), makeEvent({ http_req_path: "/other" })]);
    hub.flushAll();
    expect(s.paths()).toEqual(["/new-match", "/other"]);
    await until(() => s.of("config-applied").length === 1, "config-applied");
    const history = s.of("history")[1]!;
    expect(history.revision).toBe(1);
    expect(history.events.map((e) => e.http_req_path)).toEqual(["/old-match", "/new-match"]);
    hub.accept({ namespaceId: null, linkId: "L" }, [makeEvent({ http_req_path: "/later-match" }), makeEvent({ http_req_path: "/later" })]);
    hub.flushAll();
    expect(s.paths()).toEqual(["/new-match", "/other", "/later-match"]);
  });

  test("a newer config abandons one still being checked; a viewer leaving ends its walk", async () => {
    const hub = hubWith({ filterStepsPerEvent: 1_000_000, filterSliceSteps: 20_000 });
    const r = rng(17);
    hub.accept(
      { namespaceId: null, linkId: "L" },
      Array.from({ length: 100 }, () => makeEvent({ http_req_path: abPath(400, r) })),
    );
    const s = new TestSocket();
    const sub = hub.subscribe(link("L"), s, noExpiry);
    sub.setConfig({ type: "setConfig", revision: 1, filters: [hostile(12)] });
    sub.setConfig({ type: "setConfig", revision: 2, filters: [hostile(11)] });
    await until(() => s.of("config-applied").length === 1, "config-applied");
    await Bun.sleep(20);
    expect(s.of("config-applied")).toEqual([{ type: "config-applied", revision: 2 }]);
    const gone = new TestSocket();
    const leaving = hub.subscribe(link("L"), gone, noExpiry);
    leaving.setConfig({ type: "setConfig", revision: 1, filters: [hostile(12)] });
    leaving.close();
    await Bun.sleep(50);
    expect(gone.of("config-applied")).toEqual([]);
  });

  test("a flood of setConfig messages from many viewers is compiled a turn's worth at a time; each viewer's latest is answered last", async () => {
    const hub = hubWith();
    hub.accept({ namespaceId: null, linkId: "L" }, [makeEvent({ http_req_path: "/aaaa" })]);
    const viewers = Array.from({ length: 20 }, () => {
      const s = new TestSocket();
      return { s, sub: hub.subscribe(link("L"), s, noExpiry) };
    });
    // About 15,600 NFA states per config, each compiled twice: a few ms apiece.
    const heavy = (k: number) => Array.from({ length: 4 }, (_, i) => `request.url matches "(a{100}){39}${k}-${i}"`);
    const t0 = performance.now();
    for (let revision = 1; revision <= 10; revision++) {
      for (const [k, { sub }] of viewers.entries()) sub.setConfig({ type: "setConfig", revision, filters: heavy(k * 100 + revision) });
    }
    const elapsed = performance.now() - t0;
    // Without a bound all 200 configs are compiled in this one turn: 20 of them, compiled here, take a tenth of that.
    const b0 = performance.now();
    for (let k = 0; k < 20; k++) compileFilterChips(heavy(10_000 + k));
    const twentyConfigs = performance.now() - b0;
    expect(elapsed).toBeLessThan(twentyConfigs * 5);
    await until(() => viewers.every(({ s }) => s.of("config-applied").length + s.of("setFilterError").length > 0), "answers");
    await Bun.sleep(20);
    let answered = 0;
    for (const { s } of viewers) {
      const answers = s.messages.filter((m) => m.type === "config-applied" || m.type === "setFilterError");
      expect(answers.at(-1)).toEqual({ type: "config-applied", revision: 10 });
      answered += answers.length;
    }
    // Those the turn could afford at once were answered; the rest were superseded before they were compiled.
    expect(answered).toBeLessThan(40);
  });

  test("new events a viewer's filter cannot afford are dropped and reported to it alone; the publisher is not held up", () => {
    const hub = hubWith();
    const r = rng(18);
    const costly = new TestSocket();
    const plain = new TestSocket();
    hub.subscribe(link("L"), costly, from("203.0.113.1")).setConfig({ type: "setConfig", revision: 1, filters: [hostile(99)] });
    hub
      .subscribe(link("L"), plain, from("203.0.113.2"))
      .setConfig({ type: "setConfig", revision: 1, filters: ['request.url startsWith "/"'] });
    expect(costly.of("config-applied")).toHaveLength(1);
    const events = Array.from({ length: 200 }, () => makeEvent({ http_req_path: abPath(4200, r) }));
    const t0 = performance.now();
    hub.accept({ namespaceId: null, linkId: "L" }, events);
    hub.flushAll();
    const elapsed = performance.now() - t0;
    // Unbounded, this filter reads all 200 events (seconds): bounded, less than a fifth of that.
    expect(elapsed).toBeLessThan(unboundedMs([hostile(99)], events.slice(0, 40)));
    expect(plain.paths()).toHaveLength(200);
    expect(plain.of("dropped")).toEqual([]);
    expect(costly.paths()).toEqual([]);
    expect(costly.of("dropped")).toEqual([{ type: "dropped", count: 200, total: 200 }]);
  });

  test("a body filter over a busy link costs its viewer its own budget: events it cannot afford are dropped for it alone", () => {
    const hub = hubWith();
    const r = rng(21);
    const costly = new TestSocket();
    const cheap = new TestSocket();
    const costlyBody = 'response.body matches "[ab]*a[ab]{60}z"';
    hub.subscribe(link("B"), costly, from("203.0.113.3")).setConfig({ type: "setConfig", revision: 1, filters: [costlyBody] });
    hub
      .subscribe(link("B"), cheap, from("203.0.113.4"))
      .setConfig({ type: "setConfig", revision: 1, filters: ['response.body contains "ab"'] });
    expect(costly.of("config-applied")).toHaveLength(1);
    const events = Array.from({ length: 100 }, (_, i) => makeEvent({ http_req_path: `/e${i}`, search_resp_body: abPath(32 * 1024, r) }));
    const t0 = performance.now();
    hub.accept({ namespaceId: null, linkId: "B" }, events);
    hub.flushAll();
    const elapsed = performance.now() - t0;
    expect(elapsed).toBeLessThan(unboundedMs([costlyBody], events.slice(0, 5)));
    expect(cheap.paths()).toHaveLength(100);
    expect(cheap.of("dropped")).toEqual([]);
    expect(costly.paths()).toEqual([]);
    expect(costly.of("dropped")).toEqual([{ type: "dropped", count: 100, total: 100 }]);
  });

  test("many viewers with costly filters on one link share its budget: one publisher message costs less than one unbounded filter over 20 events", () => {
    // The channel's budget alone: the process's allowance (tested below) set out of the way.
    const hub = new LiveHub({ flushIntervalMs: 1 }, { filterAllowance: new FilterAllowance({ stepsPerSecond: 1e12, burstSteps: 1e12 }) });
    const r = rng(19);
    const viewers = Array.from({ length: 20 }, (_, k) => {
      const s = new TestSocket();
      hub.subscribe(link("L"), s, from(`203.0.113.${k}`)).setConfig({ type: "setConfig", revision: 1, filters: [hostile(99 - k)] });
      return s;
    });
    const plain = new TestSocket();
    hub
      .subscribe(link("L"), plain, from("203.0.113.99"))
      .setConfig({ type: "setConfig", revision: 1, filters: ['request.url contains "b"'] });
    const events = Array.from({ length: 50 }, () => makeEvent({ http_req_path: abPath(4200, r) }));
    const t0 = performance.now();
    hub.accept({ namespaceId: null, linkId: "L" }, events);
    const elapsed = performance.now() - t0;
    hub.flushAll();
    // Unbounded: 20 filters x 50 events. Bounded: less than one filter over 20 of them.
    expect(elapsed).toBeLessThan(unboundedMs([hostile(99)], events.slice(0, 20)));
    expect(plain.paths()).toHaveLength(50);
    for (const s of viewers) expect(s.of("dropped")).toEqual([{ type: "dropped", count: 50, total: 50 }]);
  });
});

describe("the process's filter allowance", () => {
  const hostile = (n: number) => `request.url matches "[ab]*a[ab]{${n}}z"`;
  const costly = (k: number) => [
    Array.from({ length: 8 }, (_, i) => `${hostile(99 - (i % 4))} || request.url contains "${k}-${i}"`).join(" || "),
  ];

  /** Ten links, four viewers each from ten addresses with costly filters, and a signed-in viewer with a cheap one. */
  function attack(hub: LiveHub, events: number) {
    const r = rng(28);
    const sockets: TestSocket[] = [];
    for (let l = 0; l < 10; l++) {
      for (let v = 0; v < 4; v++) {
        const s = new TestSocket();
        hub.subscribe(link(`L${l}`), s, from(`198.51.100.${l}`)).setConfig({ type: "setConfig", revision: 1, filters: costly(l * 4 + v) });
        sockets.push(s);
      }
    }
    const signedIn = new TestSocket();
    hub
      .subscribe(ns("N"), signedIn, from("192.0.2.7"))
      .setConfig({ type: "setConfig", revision: 1, filters: ['request.url contains "b"'] });
    const batches = Array.from({ length: 10 }, () => Array.from({ length: events }, () => makeEvent({ http_req_path: abPath(4200, r) })));
    const t0 = performance.now();
    for (let l = 0; l < 10; l++) hub.accept({ namespaceId: null, linkId: `L${l}` }, batches[l]!);
    hub.accept({ namespaceId: "N", linkId: null }, batches[0]!);
    const elapsed = performance.now() - t0;
    hub.flushAll();
    return { elapsed, sockets, signedIn };
  }

  test("costly filters on ten links cost the process one allowance, not ten channels' budgets; a signed-in viewer is not starved", () => {
    // Baseline, in this test: the same attack with only the per-channel budgets (what the hub did before).
    // Interleaved, and the quickest of three of each: a busy machine's pauses land in one run, not in all of them.
    const runs = Array.from({ length: 3 }, () => ({
      unbounded: attack(
        new LiveHub({ flushIntervalMs: 1 }, { filterAllowance: new FilterAllowance({ stepsPerSecond: 1e12, burstSteps: 1e12 }) }),
        20,
      ),
      bounded: attack(new LiveHub({ flushIntervalMs: 1 }), 20),
    }));
    const quickest = (of: "bounded" | "unbounded") => Math.min(...runs.map((r) => r[of].elapsed));
    const bounded = runs[0]!.bounded;
    // Ten channels' bursts (5,000,000 steps) against one allowance's (400,000), of which anonymous viewers get half.
    expect(quickest("bounded")).toBeLessThan(quickest("unbounded") / 4);
    expect(bounded.signedIn.paths()).toHaveLength(20);
    expect(bounded.signedIn.of("dropped")).toEqual([]);
    for (const s of bounded.sockets) expect(s.of("dropped").at(-1)?.total).toBe(20);
  });

  test("one address may have 32 distinct filter sets in force; more are refused, shared ones and freed places are not", () => {
    const hub = hubWith();
    const viewers = Array.from({ length: 33 }, (_, k) => {
      const s = new TestSocket();
      const sub = hub.subscribe(link(`L${k % 3}`), s, from("203.0.113.9"));
      sub.setConfig({ type: "setConfig", revision: 1, filters: [`request.url contains "/${k}"`] });
      return { s, sub };
    });
    const answers = viewers.map(({ s }) => s.messages.find((m) => m.type === "config-applied" || m.type === "setFilterError")!.type);
    expect(answers.slice(0, 32).every((a) => a === "config-applied")).toBe(true);
    expect(viewers[32]!.s.of("setFilterError")[0]).toMatchObject({
      revision: 1,
      message: expect.stringContaining("too many different live filters"),
    });
    // The same filters as a set already in force on that link need no new place.
    const same = new TestSocket();
    hub
      .subscribe(link("L0"), same, from("203.0.113.9"))
      .setConfig({ type: "setConfig", revision: 1, filters: ['request.url contains "/0"'] });
    expect(same.of("config-applied")).toHaveLength(1);
    // Another address has its own places.
    const other = new TestSocket();
    hub
      .subscribe(link("L0"), other, from("203.0.113.10"))
      .setConfig({ type: "setConfig", revision: 1, filters: ['request.url contains "/x"'] });
    expect(other.of("config-applied")).toHaveLength(1);
    // A viewer that leaves gives its place back.
    viewers[1]!.sub.close();
    viewers[32]!.sub.setConfig({ type: "setConfig", revision: 2, filters: ['request.url contains "/32"'] });
    expect(viewers[32]!.s.of("config-applied")).toEqual([{ type: "config-applied", revision: 2 }]);
  });
});

describe("viewers that never read", () => {
  const big = (i: number) => makeEvent({ http_req_path: `/${i}`, http_resp_body: "x".repeat(256 * 1024) });

  test("a slow viewer holds at most its bound (queue and socket): the oldest are dropped and reported, and it is not closed", () => {
    const budget = new SendBudget({ totalBytes: 64 * 1024 * 1024, perViewerBytes: 3 * 1024 * 1024, keepingUpBytes: 64 * 1024 });
    const hub = new LiveHub({ flushIntervalMs: 1, maxBufferedBytes: 1024 * 1024, maxBatchBytes: 512 * 1024 }, { sendBudget: budget });
    const slow = new TestSocket();
    hub.subscribe(link("L"), slow, noExpiry);
    slow.isStalled = true;
    for (let i = 0; i < 40; i++) {
      hub.accept({ namespaceId: null, linkId: "L" }, [big(i)]);
      hub.flushAll();
    }
    expect(slow.closed).toBeNull();
    const sub = [
      ...(hub as unknown as { channels: Map<string, { subscribers: Set<{ pendingBytes: number }> }> }).channels.get("link:L")!.subscribers,
    ][0]!;
    expect(sub.pendingBytes + slow.buffered).toBeLessThanOrEqual(3 * 1024 * 1024);
    slow.unstall();
    hub.flushAll();
    const dropped = slow.of("dropped").at(-1)!;
    expect(dropped.total).toBeGreaterThan(25);
    expect(slow.paths().at(-1)).toBe("/39");
  });

  test("many stalled viewers, each under its bound, are closed once together they pass the budget for all", () => {
    const budget = new SendBudget({ totalBytes: 4 * 1024 * 1024, perViewerBytes: 64 * 1024 * 1024, keepingUpBytes: 64 * 1024 });
    const hub = new LiveHub({ flushIntervalMs: 1 }, { sendBudget: budget });
    const viewers = Array.from({ length: 20 }, () => {
      const s = new TestSocket();
      hub.subscribe(link("L"), s, noExpiry);
      s.isStalled = true;
      return s;
    });
    const reading = new TestSocket();
    hub.subscribe(link("L"), reading, noExpiry);
    for (let i = 0; i < 4; i++) {
      hub.accept({ namespaceId: null, linkId: "L" }, [big(i)]);
      hub.flushAll();
    }
    // Each would hold 1 MiB: the budget (4 MiB) keeps four of them at most, and the viewer that reads is never closed.
    const open = viewers.filter((s) => s.closed === null);
    expect(open.length).toBeLessThanOrEqual(4);
    const closed = viewers.filter((s) => s.closed !== null);
    expect(closed.length).toBe(viewers.length - open.length);
    for (const s of closed) {
      expect(s.closed).toEqual({ code: 4408, reason: expect.stringContaining("read too slowly") });
      // Its close frame would wait behind what it holds: the connection is let go at once.
      expect(s.isTerminated).toBe(true);
    }
    expect(budget.heldBytes).toBeLessThanOrEqual(4 * 1024 * 1024 + 300 * 1024);
    expect(reading.closed).toBeNull();
    expect(reading.paths()).toHaveLength(4);
  });

  test("a batch never puts more than maxBatchBytes on a socket at once", () => {
    const hub = hubWith({ maxBatchBytes: 600 * 1024 });
    const s = new TestSocket();
    hub.subscribe(link("L"), s, noExpiry);
    hub.accept(
      { namespaceId: null, linkId: "L" },
      Array.from({ length: 8 }, (_, i) => big(i)),
    );
    hub.flushAll();
    const batches = s.of("events").map((m) => m.events.length);
    expect(batches.reduce((a, b) => a + b, 0)).toBe(8);
    expect(Math.max(...batches)).toBe(2);
  });
});

describe("history without viewers", () => {
  test("events nobody watches are kept as they came and serialized only when a late viewer asks: the same JSON", () => {
    const hub = hubWith({});
    const events = Array.from({ length: 20 }, (_, i) =>
      makeEvent({ http_req_path: `/quiet/${i}`, tags: { n: String(i), quote: 'a"b\\' } }),
    );
    hub.accept({ namespaceId: null, linkId: "Q" }, events);
    const s = new TestSocket();
    hub.subscribe(link("Q"), s, noExpiry);
    expect(s.of("history")[0]!.events).toEqual(events.map((e) => JSON.parse(JSON.stringify(e))));
  });

  test("the size estimate used for the byte bound stays within 15% of the real JSON", () => {
    for (const e of [makeEvent({}), makeEvent({ http_resp_body: "x".repeat(50_000), http_req_headers: [["a", "b".repeat(900)]] })]) {
      const ratio = estimateJsonLength(e) / JSON.stringify(e).length;
      expect(ratio).toBeGreaterThan(0.85);
      expect(ratio).toBeLessThan(1.15);
    }
  });
});

describe("the runtime's hub", () => {
  test("one hub per runtime, registered once as an ingest sink", async () => {
    const { createRuntime } = await import("~/runtime.ts");
    const { parseConfig } = await import("~/lib/server/env.ts");
    const { openDatabase } = await import("#db/client.ts");
    const database = await openDatabase({});
    const config = parseConfig({ DATA_DIR: "/tmp/tapscope-hub-test", SESSION_SECRET: "hub-test-secret-0123456789abcdef" });
    const runtime = createRuntime({ config, db: database.db });
    const other = createRuntime({ config, db: database.db });
    expect(other.hub).not.toBe(runtime.hub);
    const s = new TestSocket();
    runtime.hub.subscribe(ns("a"), s, noExpiry);
    runtime.sinks.accept({ namespaceId: "a", linkId: null }, [makeEvent({ http_req_path: "/via-sinks" })]);
    runtime.hub.flushAll();
    expect(s.paths()).toEqual(["/via-sinks"]);
    await runtime.close();
    await other.close();
    await database.close();
  });
});
