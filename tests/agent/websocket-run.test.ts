import { afterAll, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import type { TracedEvent } from "~/lib/protocol/event.ts";
import { BUN, ROOT, scratchDir, start } from "./harness.ts";
import { makeCa, makeLeaf } from "./tls-pki.ts";

/**
 * Real WebSocket servers and clients under `tapscope run`, each library's own: `ws` (Node) with and without
 * permessage-deflate, Python's `websockets` (deflate on by default), Bun's own server and WebSocket. Each program is
 * a server and its client in one process, so both its inbound and its outbound connection are traced; its output
 * traced must be what it is untraced, and every message shows up on both connections.
 */
const fixtures = join(ROOT, "tests/agent/fixtures/websocket");
const python = "/usr/bin/python3";

const conversation = [
  "got text echo: hello",
  'got text echo: {"op":"login","password":"s3cret","user":"ann"}',
  "got binary 0,1,2,253,254,255",
  "got text of 100006 characters",
  "got text echo: héllo wörld ✓",
];

type Case = { name: string; argv: string[]; output: string[]; isCompressed: boolean; hasFragments: boolean; hasPing: boolean };
const cases: Case[] = [
  {
    name: "ws (Node), plain",
    argv: ["node", join(fixtures, "ws-node.mjs"), "plain"],
    output: [...conversation, "got text echo: fragmented", "pong are you there", "closed 1000 done"],
    isCompressed: false,
    hasFragments: true,
    hasPing: true,
  },
  {
    name: "ws (Node), permessage-deflate with a 10-bit client window",
    argv: ["node", join(fixtures, "ws-node.mjs"), "deflate"],
    output: [...conversation, "got text echo: fragmented", "pong are you there", "closed 1000 done"],
    isCompressed: true,
    hasFragments: true,
    hasPing: true,
  },
  {
    name: "websockets (Python), permessage-deflate",
    argv: [python, join(fixtures, "ws-python.py")],
    output: [...conversation, "pong are you there", "closed 1000 done"],
    isCompressed: true,
    hasFragments: false,
    hasPing: true,
  },
  {
    name: "Bun.serve and Bun's WebSocket",
    argv: [BUN, join(fixtures, "ws-bun.ts")],
    output: [...conversation, "closed 1000 done"],
    isCompressed: false,
    hasFragments: false,
    hasPing: false,
  },
];

const isHandshake = (e: TracedEvent) => e.protocol === "http" && e.http_resp_status_code === 101 && e.tags.upgrade === "websocket";

/** One connection's messages as "who opcode text-or-bytes", the handshake checked on the way. */
function transcript(events: TracedEvent[], isOutgoing: boolean): { lines: string[]; handshake: TracedEvent; messages: TracedEvent[] } {
  const handshake = events.find((e) => isHandshake(e) && e.http_is_outgoing === isOutgoing);
  if (!handshake) throw new Error(`no ${isOutgoing ? "outbound" : "inbound"} handshake among ${events.length} events`);
  expect(handshake.http_req_path).toBe("/chat?room=1");
  const messages = events.filter((e) => e.protocol === "ws" && e.parent_event_id === handshake.event_id);
  const lines = messages.map((e) => {
    const what =
      e.ws_opcode === "binary" || e.ws_opcode === "ping" || e.ws_opcode === "pong"
        ? Buffer.from(e.ws_payload, "base64").toString("latin1")
        : e.ws_message;
    const shown = what.length > 200 ? `${what.length} characters${e.ws_payload_truncated ? " kept" : ""}` : what;
    return `${e.ws_direction} ${e.ws_opcode}${e.ws_opcode === "close" ? ` ${e.ws_close_code}` : ""} ${shown}`;
  });
  return { lines, handshake, messages };
}

describe("WebSocket libraries under tapscope run", () => {
  for (const c of cases) {
    test(c.name, async () => {
      const direct = start(c.argv, { traced: false });
      expect(await direct.exited).toBe(0);
      expect(direct.stdout().trim().split("\n")).toEqual(c.output);

      const traced = start(c.argv);
      expect(await traced.exited).toBe(0);
      expect(traced.stdout()).toBe(direct.stdout());
      const expected = [
        "client text hello",
        'client text {"op":"login","password":"[redacted]","user":"ann"}',
        "server text echo: hello",
        'server text echo: {"op":"login","password":"s3cret","user":"ann"}',
        "client binary \x00\x01\x02\xfd\xfe\xff",
        "server binary \x00\x01\x02\xfd\xfe\xff",
        "client text 65536 characters kept",
        "server text 65536 characters kept",
        "client text héllo wörld ✓",
        "server text echo: héllo wörld ✓",
        ...(c.hasFragments ? ["client text fragmented", "server text echo: fragmented"] : []),
        ...(c.hasPing ? ["client ping are you there", "server pong are you there"] : []),
        "client close 1000 done",
        "server close 1000 done",
      ];
      await traced.waitForEvents(2, isHandshake);
      const events = traced.events();
      for (const isOutgoing of [true, false]) {
        const { lines, messages } = transcript(events, isOutgoing);
        // Each side's messages in their own order (the two directions interleave by time).
        const bySide = (who: string) => lines.filter((l) => l.startsWith(who));
        expect(bySide("client")).toEqual(expected.filter((l) => l.startsWith("client")));
        expect(bySide("server")).toEqual(expected.filter((l) => l.startsWith("server")));
        const big = messages.filter((e) => e.ws_size === 100_000 || e.ws_size === 100_006);
        expect(big.map((e) => [e.ws_payload_truncated, e.ws_is_compressed])).toEqual([
          [true, c.isCompressed],
          [true, c.isCompressed],
        ]);
        // Compressed, 100 KB of one character is a couple of hundred bytes on the wire.
        if (c.isCompressed) expect(big[0]!.ws_wire_size).toBeLessThan(1000);
        const last = messages.at(-1)!;
        const count = (who: string) => expected.filter((l) => l.startsWith(who)).length;
        expect([last.ws_client_messages, last.ws_server_messages, last.ws_dropped]).toEqual([count("client"), count("server"), 0]);
        expect(last.tags.ws_ending).toBeUndefined();
      }
    }, 60_000);
  }

  test("over HTTP/2 (RFC 8441): node:http2's extended CONNECT on both ends, the stream's frames read", async () => {
    const argv = ["node", join(fixtures, "h2-websocket.mjs")];
    const direct = start(argv, { traced: false });
    expect(await direct.exited).toBe(0);
    const traced = start(argv);
    expect(await traced.exited).toBe(0);
    expect(traced.stdout()).toBe(direct.stdout());
    expect(traced.stdout()).toContain("closed 8 1000 done");
    const isConnect = (e: TracedEvent) => e.http_req_method === "CONNECT" && e.tags.upgrade === "websocket";
    await traced.waitForEvents(2, isConnect);
    const events = traced.events();
    for (const isOutgoing of [true, false]) {
      const connect = events.find((e) => isConnect(e) && e.http_is_outgoing === isOutgoing)!;
      expect([connect.http_version, connect.http_req_path, connect.http_resp_status_code]).toEqual(["2", "/chat?room=1", 200]);
      const messages = events.filter((e) => e.parent_event_id === connect.event_id);
      expect(messages.map((e) => `${e.ws_direction} ${e.ws_opcode} ${e.ws_close_code} ${e.ws_message}`)).toEqual([
        "client text -1 hello over h2",
        "server text -1 echo: hello over h2",
        'client text -1 {"op":"login","password":"[redacted]"}',
        'server text -1 echo: {"op":"login","password":"s3cret"}',
        "client close 1000 done",
        "server close 1000 done",
      ]);
      expect(messages.every((e) => e.protocol === "ws" && e.http_version === "2")).toBe(true);
    }
  }, 60_000);

  test("wss: the program's TLS decrypted, its messages read, to a TLS server with permessage-deflate", async () => {
    const scratch = scratchDir("tapscope-wss-");
    afterAll(() => scratch.cleanup());
    const ca = makeCa(scratch.dir, "ca");
    const caFile = join(scratch.dir, "trusted.pem");
    writeFileSync(caFile, ca.cert);
    const leaf = makeLeaf(scratch.dir, "ca", "leaf", ["DNS:localhost", "IP:127.0.0.1"]);
    const server = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      tls: { cert: leaf.cert, key: leaf.key },
      fetch: (req, srv) => (srv.upgrade(req) ? undefined : new Response("not a WebSocket", { status: 400 })),
      websocket: {
        perMessageDeflate: true,
        message: (socket, message) => {
          socket.send(typeof message === "string" ? `echo: ${message}` : message);
        },
      },
    });
    afterAll(() => server.stop(true));
    const argv = ["node", join(fixtures, "ws-node.mjs"), "client", `wss://localhost:${server.port}/chat?room=1`];
    const env = { NODE_EXTRA_CA_CERTS: caFile };
    const direct = start(argv, { traced: false, env });
    expect(await direct.exited).toBe(0);
    const traced = start(argv, { env });
    expect(await traced.exited).toBe(0);
    expect(traced.stdout()).toBe(direct.stdout());
    expect(traced.stdout()).toContain("closed 1000 done");
    await traced.waitForEvents(1, isHandshake);
    const { lines, handshake, messages } = transcript(traced.events(), true);
    expect(handshake.tags.tls).toBe("decrypted");
    expect(lines.filter((l) => l.startsWith("server text"))).toEqual([
      "server text echo: hello",
      'server text echo: {"op":"login","password":"s3cret","user":"ann"}',
      "server text 65536 characters kept",
      "server text echo: héllo wörld ✓",
      "server text echo: fragmented",
    ]);
    expect(messages.every((e) => e.tags.tls === "decrypted" && e.tls_server_name === "localhost")).toBe(true);
    // The extension was negotiated: the `ws` client compresses every text message (Bun's server chose not to).
    const compressed = messages.filter((e) => e.ws_direction === "client" && e.ws_opcode === "text" && e.ws_is_compressed);
    expect(compressed.map((e) => e.ws_size)).toEqual([5, 47, 100_000, Buffer.byteLength("héllo wörld ✓"), 10]);
  }, 60_000);

  test("the per-connection budget: messages past it are counted on the last event and in the run's summary", async () => {
    const argv = ["node", join(fixtures, "ws-node.mjs"), "deflate"];
    const traced = start(argv, { runArgs: ["--ws-message-rate", "1"] });
    expect(await traced.exited).toBe(0);
    expect(traced.stdout()).toContain("closed 1000 done");
    await traced.waitForEvents(2, isHandshake);
    const events = traced.events();
    const { messages } = transcript(events, true);
    const last = messages.at(-1)!;
    // A burst of ten seconds' worth (10), then the closes, which are always recorded.
    expect(messages).toHaveLength(12);
    expect(last.ws_client_messages + last.ws_server_messages - last.ws_dropped).toBe(12);
    expect(last.ws_dropped).toBe(4);
    // Both connections' drops, in the summary on stderr.
    expect(traced.stderr()).toContain("8 WebSocket messages counted but not recorded (over 1 a second on a connection: --ws-message-rate)");
  }, 60_000);
});
