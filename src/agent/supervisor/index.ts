import { dirname } from "node:path";
import { pathToFileURL } from "node:url";
import { Worker } from "node:worker_threads";
import { errorDetail } from "~/lib/errors.ts";
import type { ConnectionObserver } from "../relay/observer.ts";
import type { RelayThreads } from "../relay/relay-threads.ts";
import { isHungUp, isReadable, libc } from "../seccomp/ffi.ts";
import type { NotifMessage, WorkerInit, WorkerMessage } from "../seccomp/messages.ts";
import { receive, replyContinue } from "../seccomp/notif.ts";
import type { TlsInterception } from "../tls/interception.ts";
import type { Context } from "./context.ts";
import { handleAccept, handleBind, handleListen, retire, serveParked, sweepTakeovers } from "./inbound.ts";
import { handleName } from "./names.ts";
import { handleConnect, type OutboundRelay, releaseInboundOf, startOutboundRelay } from "./outbound.ts";
import { handleTrustOpen } from "./trust-open.ts";

/**
 * The Worker's module. In the compiled binary it is an extra entrypoint of the build (scripts/build.ts),
 * stored next to the entry under the same relative path as in src/.
 */
function notifyWorkerUrl(): URL {
  if (Bun.main.startsWith("/$bunfs/")) return new URL("./agent/seccomp/notify-worker.ts", pathToFileURL(`${dirname(Bun.main)}/`));
  return new URL("../seccomp/notify-worker.ts", import.meta.url);
}

export type SupervisorOptions = {
  /** Our copy of the seccomp listener fd (taken with pidfd_getfd). */
  listener: number;
  observer: ConnectionObserver | null;
  /** Outbound TLS interception, or null to record TLS connections without decrypting them. */
  tls?: TlsInterception | null;
  /** Opens of possible trust files handed over by the Worker (the tracee's filter must trap opens); answered by `tls`. */
  trustOpens?: WorkerInit["trustOpens"];
  /** One short line for the user on stderr. */
  say: (line: string) => void;
  /** Interception cannot work here (e.g. no permission for pidfd_getfd): the caller explains and stops. */
  onFatal: (reason: string, errno: number) => void;
  /** Relay threads for inbound connections; absent or null: the main thread relays them. */
  threads?: RelayThreads | null;
  /** Test seam: runs before each TCP notification is handled; a throw here is a supervisor fault. */
  beforeDispatch?: (m: NotifMessage) => void;
};

export type Supervisor = {
  ctx: Context;
  /** Everything passes through from now on (used on a fault). */
  isPassthrough: () => boolean;
  /** Whether any process still runs under the filter (the program or anything it started, wherever it was reparented). */
  hasTracedProcesses: () => boolean;
  /** Resolves once the last traced process has exited (the kernel says the filter has no task left). */
  lastExited: Promise<void>;
  stop: () => Promise<void>;
};

/**
 * The supervisor: a Worker receives seccomp notifications; TCP work is done here on the main thread,
 * next to the relay, with non-blocking sockets only. A fault in any handler never reaches the program:
 * that notification is let through, everything switches to passthrough, and a short report is printed.
 */
export function startSupervisor(options: SupervisorOptions): Supervisor {
  let connectionId = 0;
  const ctx: Context = {
    listener: options.listener,
    observer: options.observer,
    tls: options.tls ?? null,
    say: options.say,
    takeovers: new Map(),
    inbound: new Map(),
    outbound: new Map(),
    deferredInbound: new Set(),
    nextConnectionId: options.threads ? () => options.threads!.nextConnectionId() : () => ++connectionId,
    threads: options.threads ?? null,
    threadTakeovers: new Map(),
    stats: { intercepted: 0, inbound: 0, outbound: 0, refusedIoUring: 0, lostAccepts: 0 },
  };
  options.observer?.setInboundRelease?.((pid) => releaseInboundOf(ctx, pid));
  const control = new SharedArrayBuffer(4);
  const flags = new Int32Array(control);
  let isPassthrough = false;
  let relay: OutboundRelay | null = null;

  const crash = (where: string, err: unknown) => {
    if (isPassthrough) return;
    isPassthrough = true;
    Atomics.store(flags, 0, 1);
    for (const t of ctx.takeovers.values()) {
      for (const p of t.parked) {
        replyContinue(ctx.listener, p.id);
        libc.close(p.fd);
      }
      t.parked = [];
    }
    const detail = errorDetail(err);
    options.say(
      `internal error in ${where}; the program keeps running, with new connections untraced from now on.\n` +
        `  Please report it with this: ${detail.split("\n").slice(0, 6).join("\n  ")}`,
    );
  };

  if (ctx.threads) {
    ctx.threads.handlers = {
      connected: (key) => {
        const takeover = ctx.threadTakeovers.get(key);
        if (takeover) serveParked(ctx, takeover);
      },
      refused: (key) => {
        const takeover = ctx.threadTakeovers.get(key);
        if (takeover) retire(ctx, takeover);
      },
    };
  }

  try {
    relay = startOutboundRelay(ctx);
  } catch (err) {
    crash("the outbound relay", err);
  }

  const dispatch = (m: NotifMessage) => {
    let keepFd = false;
    try {
      options.beforeDispatch?.(m);
      if (isPassthrough || !relay) {
        replyContinue(ctx.listener, m.id);
      } else if (m.kind === "connect") {
        handleConnect(ctx, relay, m);
        keepFd = true; // handleConnect owns (and closes) the fd
      } else if (m.kind === "bind") handleBind(ctx, m);
      else if (m.kind === "listen") handleListen(ctx, m);
      else if (m.kind === "accept") keepFd = handleAccept(ctx, m);
      else handleName(ctx, m);
    } catch (err) {
      replyContinue(ctx.listener, m.id);
      crash(m.kind, err);
    } finally {
      if (!keepFd) libc.close(m.fd);
    }
  };

  const worker = new Worker(notifyWorkerUrl(), {
    workerData: { listener: options.listener, control, trustOpens: options.trustOpens ?? null } satisfies WorkerInit,
  });
  worker.unref();
  let onLastExit = () => {};
  const lastExited = new Promise<void>((resolve) => {
    onLastExit = resolve;
  });
  // If the notification loop itself is gone, nobody would answer the program's syscalls: answer them
  // from here (CONTINUE, without blocking) so the program keeps running untraced.
  let pump: Timer | null = null;
  const startPassthroughPump = () => {
    if (pump) return;
    pump = setInterval(() => {
      // Answering in the loop's stead, the pump also notices the end.
      if (isHungUp(options.listener)) {
        if (pump) clearInterval(pump);
        onLastExit();
        return;
      }
      while (isReadable(options.listener)) {
        const n = receive(options.listener);
        if ("errno" in n) break;
        replyContinue(options.listener, n.id);
      }
    }, 1);
  };
  worker.on("message", (m: WorkerMessage) => {
    switch (m.kind) {
      case "started":
        return;
      case "unused":
        onLastExit();
        return;
      case "io_uring":
        ctx.stats.refusedIoUring++;
        return;
      case "fatal":
        options.onFatal(m.reason, m.errno);
        return;
      case "crash":
        crash("the notification loop", m.error);
        return;
      case "trust-open":
        if (isPassthrough) replyContinue(ctx.listener, m.id);
        else handleTrustOpen(ctx, m);
        return;
      default:
        dispatch(m);
    }
  });
  worker.on("error", (err) => {
    crash("the notification loop", err);
    startPassthroughPump();
  });
  worker.on("exit", () => {
    // The loop ends by itself once nobody is traced; only an end with processes still under the filter is a fault.
    if (isHungUp(options.listener)) {
      onLastExit();
      return;
    }
    crash("the notification loop", "it exited");
    startPassthroughPump();
  });

  const sweep = setInterval(() => {
    try {
      sweepTakeovers(ctx);
    } catch (err) {
      crash("the listener sweep", err);
    }
  }, 2000);
  sweep.unref();

  return {
    ctx,
    isPassthrough: () => isPassthrough,
    hasTracedProcesses: () => !isHungUp(options.listener),
    lastExited,
    stop: async () => {
      clearInterval(sweep);
      if (pump) clearInterval(pump);
      relay?.v4.stop(true);
      relay?.v6?.stop(true);
      for (const t of ctx.takeovers.values()) t.server?.stop(true);
      await ctx.threads?.close();
      await worker.terminate().catch(() => {});
    },
  };
}
