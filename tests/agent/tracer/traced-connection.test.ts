import { describe, expect, test } from "bun:test";
import type { Exchange } from "~/agent/parse/exchange.ts";
import { ParentTracker } from "~/agent/tracer/parent-tracker.ts";
import { emptyTracerStats } from "~/agent/tracer/stats.ts";
import { type FinishedWork, TracedConnection, type TracedConnectionDeps } from "~/agent/tracer/traced-connection.ts";
import { TokenBucket } from "~/lib/rate-limit.ts";
import { bytes, connection, fakeProcess, h2 } from "../parse/helpers.ts";

/** A TracedConnection with its dependencies in hand: what it hands on, its counters, sequential event ids. */
function setup(options: { recordEmptyConnections?: boolean; payloadLimit?: number; clientGoneMs?: number } = {}) {
  const work: FinishedWork[] = [];
  let nextId = 0;
  const deps: TracedConnectionDeps = {
    payloadLimit: options.payloadLimit ?? 1024,
    recordEmptyConnections: options.recordEmptyConnections ?? false,
    webSocketBudget: { ratePerSecond: 0, burst: 0 },
    decodeBudget: new TokenBucket({ ratePerSecond: 0, burst: 0 }, 0),
    stats: emptyTracerStats(),
    parents: new ParentTracker<Exchange>(),
    enqueue: (w) => work.push(w),
    newEventId: () => `id-${++nextId}`,
    processInfo: fakeProcess,
    clientGoneMs: options.clientGoneMs,
  };
  const open = (id: number, direction: "inbound" | "outbound", pid = 7) => {
    deps.stats.openConnections++;
    return new TracedConnection(connection(id, direction, pid), fakeProcess(pid), deps);
  };
  return { work, deps, open };
}

const REQUEST = "GET /a HTTP/1.1\r\nHost: h\r\n\r\n";
const RESPONSE = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";

describe("TracedConnection, alone", () => {
  test("an HTTP/1.1 exchange is handed on when its response completes, with the connection and process", () => {
    const { work, deps, open } = setup();
    const tap = open(1, "inbound");
    tap.onData(true, bytes(REQUEST), 10);
    expect(work).toHaveLength(0);
    tap.onData(false, bytes(RESPONSE), 20);
    expect(work).toHaveLength(1);
    const item = work[0]!;
    expect(item.kind).toBe("http");
    if (item.kind !== "http") return;
    expect(item.ex.eventId).toBe("id-1");
    expect(item.conn.id).toBe(1);
    expect(item.proc.pid).toBe(7);
    tap.onClose(30);
    // An HTTP connection is described by its exchanges: no tcp summary.
    expect(work).toHaveLength(1);
    expect(deps.stats.bytesFromClients).toBe(REQUEST.length);
    expect(deps.stats.bytesFromServers).toBe(RESPONSE.length);
    expect(deps.stats.openConnections).toBe(0);
  });

  test("an inbound request in flight is the parent of the process's outbound calls, through the tracker it was given", () => {
    const { work, deps, open } = setup();
    const inbound = open(1, "inbound");
    inbound.onData(true, bytes(REQUEST), 10);
    expect(deps.parents.current(7)).toBe("id-1");
    const outbound = open(2, "outbound");
    outbound.onData(true, bytes("GET /db HTTP/1.1\r\nHost: db\r\n\r\n"), 20);
    outbound.onData(false, bytes(RESPONSE), 30);
    inbound.onData(false, bytes(RESPONSE), 40);
    expect(deps.parents.current(7)).toBe("");
    const [call, served] = work;
    expect(call?.kind === "http" && call.ex.parentEventId).toBe("id-1");
    expect(served?.kind === "http" && served.ex.eventId).toBe("id-1");
  });

  test("an inbound connection shown before its accept (the listener's process) takes the accepting process when it comes: its events and its calls' parent", () => {
    const { work, deps, open } = setup();
    const inbound = open(1, "inbound", 7);
    inbound.onData(true, bytes(REQUEST), 10);
    expect(deps.parents.current(7)).toBe("id-1");
    inbound.onProcess(9);
    // The request in flight is now the accepting process's: its outbound call finds it.
    expect([deps.parents.current(7), deps.parents.current(9)]).toEqual(["", "id-1"]);
    const outbound = open(2, "outbound", 9);
    outbound.onData(true, bytes("GET /db HTTP/1.1\r\nHost: db\r\n\r\n"), 20);
    outbound.onData(false, bytes(RESPONSE), 30);
    inbound.onData(false, bytes(RESPONSE), 40);
    inbound.onData(true, bytes(REQUEST), 50);
    inbound.onData(false, bytes(RESPONSE), 60);
    expect([deps.parents.current(7), deps.parents.current(9)]).toEqual(["", ""]);
    const [call, served, next] = work;
    expect(call?.kind === "http" && call.ex.parentEventId).toBe("id-1");
    for (const item of [served, next]) {
      expect(item?.kind === "http" && [item.conn.pid, item.proc.pid]).toEqual([9, 9]);
    }
  });

  test("a connection that is not HTTP becomes one tcp summary at close, with its byte counts and parent", () => {
    const { work, deps, open } = setup();
    deps.parents.start(7, { eventId: "parent" } as Exchange);
    const tap = open(1, "outbound");
    tap.onData(false, bytes("220 smtp ready\r\n"), 10);
    tap.onData(true, bytes("EHLO x\r\n"), 20);
    tap.onClose(30, "reset");
    expect(work).toHaveLength(1);
    const item = work[0]!;
    expect(item.kind).toBe("tcp");
    if (item.kind !== "tcp") return;
    expect(item.sum).toMatchObject({
      bytesFromClient: 8,
      bytesFromServer: 16,
      parentEventId: "parent",
      eventId: "id-1",
      closedAt: 30,
      tags: { reason: "server spoke first", error: "reset" },
    });
  });

  test("the same connection closed twice is counted once", () => {
    const { work, deps, open } = setup();
    const tap = open(1, "outbound");
    tap.onData(true, new Uint8Array([0, 0, 0, 8, 4, 210, 22, 47]), 10);
    tap.onClose(20);
    tap.onClose(30);
    expect(work).toHaveLength(1);
    expect(deps.stats.openConnections).toBe(0);
    expect(deps.stats.bytesFromClients).toBe(8);
  });

  test("an empty inbound connection is recorded only when asked for", () => {
    const quiet = setup();
    quiet.open(1, "inbound").onClose(10);
    expect(quiet.work).toHaveLength(0);
    const recording = setup({ recordEmptyConnections: true });
    recording.open(1, "inbound").onClose(10);
    expect(recording.work.map((w) => w.kind)).toEqual(["tcp"]);
  });

  test("a TLS ClientHello is not parsed as HTTP: the connection is opaque, tagged tls", () => {
    const { work, open } = setup();
    const tap = open(1, "outbound");
    tap.onData(true, new Uint8Array([0x16, 0x03, 0x01, 0x00, 0x05, 1, 0, 0, 1, 0]), 10);
    tap.onData(false, new Uint8Array([0x16, 0x03, 0x03]), 20);
    tap.onClose(30);
    expect(work).toHaveLength(1);
    expect(work[0]!.kind === "tcp" && work[0]!.sum.tags).toMatchObject({ tls: "not decrypted", tls_reason: "interception off" });
  });

  test("inbound TLS is the program's own: recorded as not decrypted with that reason", () => {
    const { work, open } = setup();
    const tap = open(1, "inbound");
    tap.onData(true, new Uint8Array([0x16, 0x03, 0x01, 0x00, 0x05, 1, 0, 0, 1, 0]), 10);
    tap.onClose(30);
    expect(work[0]!.kind === "tcp" && work[0]!.sum.tags).toMatchObject({
      tls: "not decrypted",
      tls_reason: "inbound TLS (the program terminates it)",
    });
  });

  test("a parser failure counts in the stats it was given and leaves the connection passthrough", () => {
    const { work, deps, open } = setup();
    const tap = open(1, "inbound");
    tap.onData(true, bytes(REQUEST), 10);
    tap.onData(false, bytes("HTTP/1.1 banana\r\n\r\n"), 20);
    tap.onData(false, bytes("more bytes"), 30);
    tap.onClose(40);
    expect(deps.stats.parserGaveUp).toBe(1);
    const tcp = work.find((w) => w.kind === "tcp");
    expect(tcp?.kind).toBe("tcp");
    expect(tcp?.kind === "tcp" ? tcp.sum.tags.passthrough : undefined).toBe("response: bad status code");
    expect(deps.stats.bytesFromServers).toBe("HTTP/1.1 banana\r\n\r\n".length + "more bytes".length);
  });

  test("HTTP/2 prior knowledge is parsed in the same http mode: no tcp summary for a connection that spoke HTTP/2", () => {
    const { work, deps, open } = setup();
    const tap = open(1, "inbound");
    tap.onData(true, bytes("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"), 10);
    tap.onData(false, h2.settings(), 15);
    tap.onClose(20);
    expect(work).toEqual([]);
    expect(deps.stats.parserGaveUp + deps.stats.tapErrors).toBe(0);
  });

  test("a client's HTTP/2 preface the server never answered is a tcp summary with the reason", () => {
    const { work, deps, open } = setup();
    const tap = open(1, "inbound");
    tap.onData(true, bytes("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"), 10);
    tap.onClose(20);
    expect(work.map((w) => (w.kind === "tcp" ? w.sum.tags.passthrough : w.kind))).toEqual([
      "the server never answered with HTTP/2 SETTINGS",
    ]);
    expect(deps.stats.parserGaveUp).toBe(1);
  });
});

describe("TracedConnection: the client's FIN before an answer", () => {
  const unanswered = (work: FinishedWork[]) =>
    work.map((w) => (w.kind === "http" ? [w.ex.request.target, w.ex.response?.status ?? 0, w.ex.unanswered ?? null] : [w.kind]));

  test("a request still without a response head a while after the FIN is handed on as given up at the FIN, the connection open", async () => {
    const { work, open } = setup({ clientGoneMs: 30 });
    const tap = open(1, "inbound");
    tap.onData(true, bytes(REQUEST), 10);
    tap.onEnd(true, 2_000_010);
    expect(work).toHaveLength(0);
    for (let waited = 0; work.length === 0 && waited < 10_000; waited += 20) await Bun.sleep(20);
    expect(unanswered(work)).toEqual([["/a", 0, { reason: "client_aborted", at: 2_000_010 }]]);
    // A late answer has nothing to pair with; the close adds nothing.
    tap.onData(false, bytes(RESPONSE), 3_000_000);
    tap.onClose(3_000_010);
    expect(work).toHaveLength(1);
  });

  test("a client that only half-closed gets its answer within the grace: answered, as it was", async () => {
    const { work, open } = setup({ clientGoneMs: 200 });
    const tap = open(1, "inbound");
    tap.onData(true, bytes(REQUEST), 10);
    tap.onEnd(true, 20);
    tap.onData(false, bytes(RESPONSE), 30);
    tap.onClose(40);
    await Bun.sleep(300);
    expect(unanswered(work)).toEqual([["/a", 200, null]]);
  });
});
