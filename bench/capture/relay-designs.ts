#!/usr/bin/env bun
import { dlopen } from "bun:ffi";
/**
 * `bun bench/capture/relay-designs.ts`: is a relay on bun:ffi worth a rewrite? Two relays as reverse
 * proxies in front of the same node server (bench/capture/server.js), each with the same tracer as
 * `tapscope run --no-publish` or with none, driven by `wrk -t2 -c16`, alternated with the server alone:
 *   bun  the product's relay: Bun sockets (src/agent/relay/pipe.ts through startReverseProxy);
 *   ffi  an epoll loop on bun:ffi: recv into one reused buffer, send from it, a fresh copy of each read
 *        for the tracer (its tap contract), the tracer flushed after each wakeup. It blocks its thread,
 *        so in the product it would need a thread of its own with the tracer moved there.
 * For each, the proxy process's CPU per request (schedstat, all threads), requests/s against direct,
 * and the budget: at 16 connections wrk and the server keep both cores busy, so traced/direct >= 0.6
 * needs the relay's CPU per request at or below 2/3 of direct's machine CPU per request.
 *
 * Options: --rounds N (default 3), --duration S (default 5), --sizes 1,65536, --conns 16, --smoke (one round of 1 s,
 * 1 B, no warm-up: proves it runs, measures nothing).
 * Internal: --proxy bun|ffi --listen PORT --to PORT [--trace].
 */
import { spawn, spawnSync } from "node:child_process";
import { availableParallelism } from "node:os";
import { join } from "node:path";
import { hostMetadata } from "../../src/agent/event.ts";
import { type ConnectionObserver, type ConnectionTap, nowMicros } from "../../src/agent/relay/observer.ts";
import { startReverseProxy } from "../../src/agent/relay/reverse-proxy.ts";
import { encodeSockAddr } from "../../src/agent/relay/sockaddr.ts";
import {
  AF_INET,
  E,
  errno,
  IPPROTO_TCP,
  libc,
  SO_REUSEADDR,
  SOCK_CLOEXEC,
  SOCK_NONBLOCK,
  SOL_SOCKET,
  setIntOpt,
  TCP_NODELAY,
} from "../../src/agent/seccomp/ffi.ts";
import { bindTo, connectTo, newSocket } from "../../src/agent/seccomp/sockets.ts";
import { createTracer, type Tracer } from "../../src/agent/tracer.ts";
import { parseHostEnvironment } from "../../src/lib/server/env.ts";
import { isSmoke, optionOf } from "../options.ts";
import { cpuNanos, median, waitForPort } from "./measure.ts";

const args = process.argv.slice(2);
const option = optionOf(args);

/** The tracer `tapscope run --no-publish` builds (default redaction and payload limit); its events are dropped. */
function newTracer(): Tracer {
  return createTracer({ host: hostMetadata(parseHostEnvironment({})), onEvent: () => {} });
}

// ---------------------------------------------------------------- the bun:ffi relay

const EPOLLIN = 0x1;
const EPOLLOUT = 0x4;
const EPOLLERR = 0x8;
const EPOLLHUP = 0x10;
const EPOLL_CTL_ADD = 1;
const EPOLL_CTL_MOD = 3;
const MSG_NOSIGNAL = 0x4000;
const SHUT_WR = 1;

type Leg = { fd: number; queue: Uint8Array[]; isConnected: boolean; isReadDone: boolean; isWriteShut: boolean; interest: number };
type Conn = { client: Leg; server: Leg; tap: ConnectionTap | null; isClosed: boolean };

function runFfiRelay(listenPort: number, targetPort: number, observer: ConnectionObserver | null, tracer: Tracer | null): never {
  // The supervisor's libc bindings cover sockets; the relay loop needs epoll and the data calls too.
  const { symbols: io } = dlopen("libc.so.6", {
    epoll_create1: { args: ["i32"], returns: "i32" },
    epoll_ctl: { args: ["i32", "i32", "i32", "ptr"], returns: "i32" },
    epoll_wait: { args: ["i32", "ptr", "i32", "i32"], returns: "i32" },
    recv: { args: ["i32", "ptr", "u64", "i32"], returns: "i64" },
    send: { args: ["i32", "ptr", "u64", "i32"], returns: "i64" },
    shutdown: { args: ["i32", "i32"], returns: "i32" },
  });
  const loopback = (port: number) => encodeSockAddr({ family: 4, ip: "127.0.0.1", port }, AF_INET);
  const listenFd = newSocket(AF_INET);
  setIntOpt(listenFd, SOL_SOCKET, SO_REUSEADDR, 1);
  const err = bindTo(listenFd, loopback(listenPort)) || (libc.listen(listenFd, 1024) < 0 ? errno() : 0);
  if (err) throw new Error(`listen ${listenPort}: errno ${err}`);
  const target = loopback(targetPort);

  const ep = io.epoll_create1(SOCK_CLOEXEC);
  const isArm = process.arch === "arm64";
  const EV = isArm ? 16 : 12; // struct epoll_event is packed on x86_64
  const DATA = isArm ? 8 : 4;
  const ctlEvent = new Uint8Array(EV);
  const ctlView = new DataView(ctlEvent.buffer);
  const ctl = (op: number, fd: number, events: number) => {
    ctlView.setUint32(0, events, true);
    ctlView.setUint32(DATA, fd, true);
    io.epoll_ctl(ep, op, fd, ctlEvent);
  };
  const MAX = 256;
  const events = new Uint8Array(EV * MAX);
  const eventsView = new DataView(events.buffer);
  const buf = new Uint8Array(256 * 1024);
  const conns: Array<{ conn: Conn; side: "client" | "server" } | undefined> = [];
  ctl(EPOLL_CTL_ADD, listenFd, EPOLLIN);
  let nextId = 0;

  const closeConn = (conn: Conn, error?: string) => {
    if (conn.isClosed) return;
    conn.isClosed = true;
    for (const leg of [conn.client, conn.server]) {
      conns[leg.fd] = undefined;
      libc.close(leg.fd);
    }
    conn.tap?.onClose(nowMicros(), error);
  };
  const interest = (leg: Leg, other: Leg) =>
    (leg.isReadDone || other.queue.length > 0 ? 0 : EPOLLIN) | (leg.queue.length > 0 || !leg.isConnected ? EPOLLOUT : 0);
  /** epoll_ctl only when a leg's interest changed (backpressure, a pending connect or write). */
  const updateLeg = (leg: Leg, other: Leg) => {
    const wanted = interest(leg, other);
    if (wanted === leg.interest) return;
    leg.interest = wanted;
    ctl(EPOLL_CTL_MOD, leg.fd, wanted);
  };
  /** Writes `bytes` to `to` now or queues what the kernel did not take; false when `to` is gone. */
  const write = (to: Leg, bytes: Uint8Array): boolean => {
    if (to.queue.length > 0 || !to.isConnected) {
      to.queue.push(bytes.slice());
      return true;
    }
    const n = Number(io.send(to.fd, bytes, bytes.length, MSG_NOSIGNAL));
    if (n === bytes.length) return true;
    if (n < 0 && errno() !== E.EAGAIN) return false;
    to.queue.push(bytes.slice(Math.max(0, n)));
    return true;
  };
  const flush = (leg: Leg): boolean => {
    while (leg.queue.length > 0) {
      const head = leg.queue[0]!;
      const n = Number(io.send(leg.fd, head, head.length, MSG_NOSIGNAL));
      if (n < 0) return errno() === E.EAGAIN;
      if (n < head.length) {
        leg.queue[0] = head.subarray(n);
        return true;
      }
      leg.queue.shift();
    }
    return true;
  };

  for (;;) {
    const n = io.epoll_wait(ep, events, MAX, -1);
    for (let i = 0; i < n; i++) {
      const flags = eventsView.getUint32(i * EV, true);
      const fd = eventsView.getUint32(i * EV + DATA, true);
      if (fd === listenFd) {
        for (;;) {
          const clientFd = libc.accept4(listenFd, null, null, SOCK_NONBLOCK | SOCK_CLOEXEC);
          if (clientFd < 0) break;
          const serverFd = newSocket(AF_INET);
          setIntOpt(clientFd, IPPROTO_TCP, TCP_NODELAY, 1);
          setIntOpt(serverFd, IPPROTO_TCP, TCP_NODELAY, 1);
          const leg = (fd: number, isConnected: boolean): Leg => ({
            fd,
            queue: [],
            isConnected,
            isReadDone: false,
            isWriteShut: false,
            interest: isConnected ? EPOLLIN : EPOLLOUT,
          });
          const conn: Conn = { client: leg(clientFd, true), server: leg(serverFd, false), tap: null, isClosed: false };
          const at = nowMicros();
          conn.tap =
            observer?.onOpen({
              id: ++nextId,
              direction: "inbound",
              clientAddr: "127.0.0.1:1",
              serverAddr: `127.0.0.1:${targetPort}`,
              pid: 0,
              startedAt: at,
              connectedAt: at,
            }) ?? null;
          conns[clientFd] = { conn, side: "client" };
          conns[serverFd] = { conn, side: "server" };
          const connectErr = connectTo(serverFd, target);
          if (connectErr && connectErr !== E.EINPROGRESS) {
            closeConn(conn, "connect");
            continue;
          }
          ctl(EPOLL_CTL_ADD, clientFd, EPOLLIN);
          ctl(EPOLL_CTL_ADD, serverFd, EPOLLOUT);
        }
        continue;
      }
      const entry = conns[fd];
      if (!entry || entry.conn.isClosed) continue;
      const { conn, side } = entry;
      const from = side === "client" ? conn.client : conn.server;
      const to = side === "client" ? conn.server : conn.client;
      if (flags & EPOLLOUT) {
        from.isConnected = true;
        if (!flush(from)) {
          closeConn(conn, "write");
          continue;
        }
        if (from.queue.length === 0 && to.isReadDone && !from.isWriteShut) {
          from.isWriteShut = true;
          io.shutdown(from.fd, SHUT_WR);
        }
      }
      if (flags & (EPOLLIN | EPOLLHUP | EPOLLERR)) {
        const got = Number(io.recv(fd, buf, buf.length, 0));
        if (got > 0) {
          const chunk = buf.subarray(0, got);
          if (!write(to, chunk)) {
            closeConn(conn, "write");
            continue;
          }
          conn.tap?.onData(side === "client", buf.slice(0, got), nowMicros());
        } else if (got === 0) {
          from.isReadDone = true;
          conn.tap?.onEnd?.(side === "client", nowMicros());
          if (to.queue.length === 0 && !to.isWriteShut) {
            to.isWriteShut = true;
            io.shutdown(to.fd, SHUT_WR);
          }
          if (from.isReadDone && to.isReadDone) {
            closeConn(conn);
            continue;
          }
        } else if (errno() !== E.EAGAIN) {
          closeConn(conn, "reset");
          continue;
        }
      }
      updateLeg(conn.client, conn.server);
      updateLeg(conn.server, conn.client);
    }
    tracer?.flush();
  }
}

// ---------------------------------------------------------------- proxy child

const proxy = option("proxy", "");
if (proxy) {
  const listen = Number(option("listen", "0"));
  const to = Number(option("to", "0"));
  const tracer = args.includes("--trace") ? newTracer() : null;
  if (proxy === "ffi") runFfiRelay(listen, to, tracer, tracer);
  startReverseProxy({ listenHost: "127.0.0.1", listenPort: listen, targetHost: "127.0.0.1", targetPort: to, observer: tracer });
  await new Promise(() => {});
}

// ---------------------------------------------------------------- driver

const rounds = Number(option("rounds", "3", "1"));
const duration = Number(option("duration", "5", "1"));
const sizes = option("sizes", "1,65536", "1").split(",").map(Number);
const connsList = option("conns", "16").split(",").map(Number);
const cpus = availableParallelism();
if (spawnSync("wrk", ["--version"]).error) {
  console.error("relay-designs needs wrk (Debian: apt-get install wrk)");
  process.exit(1);
}

type Mode = "direct" | "bun" | "ffi" | "bun+trace" | "ffi+trace";
const modes: Mode[] = ["direct", "bun", "ffi", "bun+trace", "ffi+trace"];
const results = new Map<string, { rps: number[]; cpu: number[] }>();
let port = 21_000 + Math.floor(Math.random() * 1000);

for (let round = 1; round <= rounds; round++) {
  for (const size of sizes) {
    const serverPort = port++;
    const server = spawn("node", [join(import.meta.dir, "server.js"), String(serverPort), String(size)], { stdio: "ignore" });
    await waitForPort(serverPort);
    const order = round % 2 ? modes : [...modes].reverse();
    for (const mode of order) {
      let child: ReturnType<typeof spawn> | null = null;
      let target = serverPort;
      if (mode !== "direct") {
        target = port++;
        const [kind, trace] = mode.split("+");
        const extra = trace ? ["--trace"] : [];
        child = spawn(
          process.execPath,
          [import.meta.path, "--proxy", kind!, "--listen", String(target), "--to", String(serverPort), ...extra],
          {
            stdio: ["ignore", "ignore", "inherit"],
          },
        );
        await waitForPort(target);
      }
      if (!isSmoke) spawnSync("wrk", ["-t1", "-c4", "-d1s", `http://127.0.0.1:${target}/`]);
      for (const conns of connsList) {
        const before = child ? cpuNanos(child.pid!) : 0;
        const out = spawnSync("wrk", [`-t${Math.min(2, conns)}`, `-c${conns}`, `-d${duration}s`, `http://127.0.0.1:${target}/`], {
          encoding: "utf8",
        }).stdout;
        const rps = Number(/Requests\/sec:\s*([\d.]+)/.exec(out)?.[1]);
        const requests = Number(/(\d+) requests in/.exec(out)?.[1] ?? 0);
        const cpu = child && requests ? (cpuNanos(child.pid!) - before) / 1000 / requests : 0;
        const k = `${size}/${conns}/${mode}`;
        const r = results.get(k) ?? { rps: [], cpu: [] };
        r.rps.push(rps);
        r.cpu.push(cpu);
        results.set(k, r);
        process.stderr.write(
          `round ${round} ${String(size).padStart(5)} B c=${conns} ${mode.padEnd(9)} ${rps.toFixed(0).padStart(6)} req/s${cpu ? `  ${cpu.toFixed(1)} µs/req` : ""}\n`,
        );
      }
      child?.kill("SIGKILL");
    }
    server.kill("SIGKILL");
  }
}

console.log(`\nrelay designs: median of ${rounds} alternated runs of ${duration}s (wrk, ${cpus} CPUs)`);
console.log("response  conns  mode       req/s    vs direct  proxy CPU/req  budget for 0.6");
for (const size of sizes) {
  for (const conns of connsList) {
    const direct = median(results.get(`${size}/${conns}/direct`)?.rps ?? []);
    // Saturated: direct's machine CPU per request is all cores over its rate; 0.6 leaves 2/3 of that.
    const budget = ((cpus * 1e6) / direct) * (2 / 3);
    for (const mode of modes) {
      const r = results.get(`${size}/${conns}/${mode}`)!;
      const rps = median(r.rps);
      console.log(
        [
          (size === 1 ? "1 B" : `${size / 1024} KiB`).padEnd(8),
          String(conns).padStart(5),
          mode.padEnd(9),
          rps.toFixed(0).padStart(7),
          (rps / direct).toFixed(2).padStart(9),
          (mode === "direct" ? "" : `${median(r.cpu).toFixed(1)}µs`).padStart(13),
          mode === "direct" ? `${budget.toFixed(1)}µs`.padStart(14) : "",
        ].join("  "),
      );
    }
  }
}
