import { afterEach, describe, expect, test } from "bun:test";
import type { Server } from "bun";
import { Backoff } from "~/agent/publisher/backoff.ts";
import { type ConnectionHandlers, PublisherConnection } from "~/agent/publisher/connection.ts";
import { JoinError } from "~/agent/publisher/join.ts";

/**
 * A stand-in server: JoinPublisher answers with `joinStatus` (a ticket when 200), the socket says ready and
 * echoes nothing else; `dropSockets` closes every open socket from the server's side.
 */
function standIn() {
  const state = { joinStatus: 200, joins: 0, sockets: new Set<{ close(): void }>() };
  const server: Server<undefined> = Bun.serve({
    port: 0,
    fetch(req, srv) {
      const url = new URL(req.url);
      if (url.pathname === "/api/JoinPublisher") {
        state.joins++;
        if (state.joinStatus !== 200) return Response.json({ error: "no" }, { status: state.joinStatus });
        return Response.json({ websocketUrl: `ws://127.0.0.1:${srv.port}/ws`, linkId: "link-1" });
      }
      if (srv.upgrade(req, { data: undefined })) return undefined;
      return new Response("not found", { status: 404 });
    },
    websocket: {
      open(ws) {
        state.sockets.add(ws);
        ws.send(JSON.stringify({ type: "ready", maxMessageBytes: 1234, formats: [] }));
      },
      message(ws, message) {
        ws.send(JSON.stringify({ type: "pong", seq: Number(JSON.parse(String(message)).seq) }));
      },
      close(ws) {
        state.sockets.delete(ws);
      },
    },
  });
  return {
    state,
    endpoint: `http://127.0.0.1:${server.port}`,
    dropSockets: () => {
      for (const ws of state.sockets) ws.close();
    },
    stop: () => server.stop(true),
  };
}

type Log = string[];

function handlers(log: Log, canReconnect = () => true): ConnectionHandlers {
  return {
    onReady: (ready, isReconnect) => log.push(`ready ${ready.maxMessageBytes}${isReconnect ? " again" : ""}`),
    onMessage: (message) => log.push(message.type),
    onGone: () => log.push("gone"),
    onJoin: (info) => log.push(`joined ${info.linkId}`),
    onRefused: (error) => log.push(`refused ${(error as JoinError).status}`),
    canReconnect,
  };
}

async function until(condition: () => boolean, timeoutMs = 3000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error("timed out");
    await Bun.sleep(5);
  }
}

const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});

describe("PublisherConnection, alone", () => {
  test("joins, connects, and hands over the ready message and then the server's other messages", async () => {
    const server = standIn();
    const log: Log = [];
    const connection = new PublisherConnection({ endpoint: server.endpoint }, new Backoff(10, 50), handlers(log));
    cleanups.push(() => connection.close(), server.stop);
    expect(connection.readySocket).toBeNull();
    const info = await connection.join();
    expect(info.linkId).toBe("link-1");
    await until(() => connection.readySocket !== null);
    connection.readySocket!.send(JSON.stringify({ type: "ping", seq: 1 }));
    await until(() => log.includes("pong"));
    expect(log).toEqual(["joined link-1", "ready 1234", "pong"]);
  });

  test("a socket the server drops is reported, then joined again after the backoff, as a reconnect", async () => {
    const server = standIn();
    const log: Log = [];
    const connection = new PublisherConnection({ endpoint: server.endpoint }, new Backoff(10, 50), handlers(log));
    cleanups.push(() => connection.close(), server.stop);
    await connection.join();
    await until(() => connection.readySocket !== null);
    server.dropSockets();
    await until(() => log.includes("ready 1234 again"));
    expect(log).toEqual(["joined link-1", "ready 1234", "gone", "joined link-1", "ready 1234 again"]);
    expect(connection.reconnects).toBe(1);
    expect(server.state.joins).toBe(2);
  });

  test("a server that is away at the first join is retried; a refused join is thrown and not retried", async () => {
    const server = standIn();
    cleanups.push(server.stop);
    server.state.joinStatus = 503;
    const log: Log = [];
    const retried = new PublisherConnection({ endpoint: server.endpoint }, new Backoff(10, 50), handlers(log));
    cleanups.push(() => retried.close());
    await expect(retried.join()).rejects.toBeInstanceOf(JoinError);
    await until(() => server.state.joins >= 2);
    server.state.joinStatus = 200;
    await until(() => retried.readySocket !== null);

    server.state.joinStatus = 401;
    const joinsBefore = server.state.joins;
    const refused = new PublisherConnection({ endpoint: server.endpoint }, new Backoff(10, 50), handlers([]));
    cleanups.push(() => refused.close());
    await expect(refused.join()).rejects.toMatchObject({ status: 401 });
    await Bun.sleep(60);
    expect(server.state.joins).toBe(joinsBefore + 1);
  });

  test("a reconnect that is refused gives up and says so", async () => {
    const server = standIn();
    const log: Log = [];
    const connection = new PublisherConnection({ endpoint: server.endpoint }, new Backoff(10, 50), handlers(log));
    cleanups.push(() => connection.close(), server.stop);
    await connection.join();
    await until(() => connection.readySocket !== null);
    server.state.joinStatus = 403;
    server.dropSockets();
    await until(() => log.includes("refused 403"));
    const joins = server.state.joins;
    await Bun.sleep(60);
    expect(server.state.joins).toBe(joins);
    expect(connection.hasSocket).toBe(false);
  });

  test("no reconnect while canReconnect says no; close ends the socket without reporting it gone", async () => {
    const server = standIn();
    let allowed = true;
    const log: Log = [];
    const connection = new PublisherConnection(
      { endpoint: server.endpoint },
      new Backoff(10, 50),
      handlers(log, () => allowed),
    );
    cleanups.push(() => connection.close(), server.stop);
    await connection.join();
    await until(() => connection.readySocket !== null);
    allowed = false;
    server.dropSockets();
    await until(() => log.includes("gone"));
    await Bun.sleep(60);
    expect(server.state.joins).toBe(1);

    allowed = true;
    const again = new PublisherConnection({ endpoint: server.endpoint }, new Backoff(10, 50), handlers(log));
    cleanups.push(() => again.close());
    await again.join();
    await until(() => again.readySocket !== null);
    const entries = log.length;
    again.close();
    await Bun.sleep(50);
    expect(again.hasSocket).toBe(false);
    expect(log.length).toBe(entries);
  });
});
