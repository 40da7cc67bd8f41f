import type { Socket, SocketHandler } from "bun";
import { type ConnectionInfo, type ConnectionObserver, type ConnectionTap, nowMicros } from "./observer.ts";

/**
 * One relayed TCP connection: two Bun sockets and the bytes between them. Bytes are forwarded first and
 * untouched; the tap sees them afterwards. Bun hands over a fresh buffer per read and nothing here modifies
 * one, so reads are queued and shown to the tap as they are, never copied. Backpressure pauses the reading side; FIN is forwarded as
 * FIN (half-close) and a reset as a reset, so each end sees what it would see without the relay.
 */
export type Side = "client" | "server";
/** What a relay socket's events go to: a Pipe, or another relay (the TLS relay) taking the same calls. */
export type LegOwner = Pick<Pipe, "onData" | "onDrain" | "onEnd" | "onSocketClosed">;
export type LegData = { pipe: LegOwner; side: Side } | undefined;
type Queued = { bytes: Uint8Array; isTapped: boolean };

const HIGH_WATER = 1 << 20;
/** A tap call slower than this (wall time, so generous on a loaded machine) detaches the tap: the connection becomes plain passthrough. */
const TAP_BUDGET_MS = 200;
/** An inbound connection is shown to the observer at the latest this long after both legs are up, or past this many bytes. */
const DEFER_MAX_MS = 50;
const DEFER_MAX_BYTES = 256 * 1024;

export type PipeStats = { opened: number; tapErrors: number };
export const pipeStats: PipeStats = { opened: 0, tapErrors: 0 };

class Leg {
  socket: Socket<LegData> | null = null;
  /** Bytes waiting to be written to this leg. */
  queue: Queued[] = [];
  queuedBytes = 0;
  /** The peer sent FIN; forward it once the queue is flushed. */
  isEndPending = false;
  isWriteShut = false;
  /** This leg's remote end sent FIN (we will read nothing more). */
  isReadEnded = false;
  isClosed = false;
}

/** Counts forwards of bytes not yet shown to the tap (see SharedParentTracker). */
export type ForwardCounter = { forwardBegin(): void; forwardEnd(): void };

export class Pipe {
  private readonly legs: Record<Side, Leg> = { client: new Leg(), server: new Leg() };
  private tap: ConnectionTap | null = null;
  /** Both legs are attached: bytes flow, and each chunk goes to the tap (or the deferred buffer) once. */
  private isOpened = false;
  private isFinished = false;
  /** Set once either side was reset: the error every later close reports. */
  private resetError: string | null = null;
  /** The tap came from whoever relayed this connection before the pipe took it over (a CONNECT's): none is opened. */
  private isTapAdopted = false;
  private endsBeforeOpen: Side[] = [];
  /**
   * Inbound connections wait to be shown to the observer until the program accepted them, so the
   * event names the process that did (a pre-forked worker, not the parent that bound). Meanwhile copies
   * are kept, bounded; bytes are never held back.
   */
  private deferred: { items: Array<{ from: Side; bytes: Uint8Array | null; at: number }>; size: number } | null = null;
  /** The process that accepted the connection has been told (info.pid is no longer the listener's). */
  private isPidKnown = false;
  info: ConnectionInfo;

  constructor(
    info: ConnectionInfo,
    private readonly observer: ConnectionObserver | null,
    private readonly onFinish?: () => void,
    private readonly options: { deferTap?: boolean; onRelease?: (pipe: Pipe) => void; forwarding?: ForwardCounter } = {},
  ) {
    this.info = info;
    if (options.deferTap && observer) {
      this.deferred = { items: [], size: 0 };
      setTimeout(() => this.release(), DEFER_MAX_MS).unref();
    }
  }

  get isDeferred(): boolean {
    return this.deferred !== null;
  }

  /** Shows the connection to the observer now, as seen by process `pid` when known. */
  release(pid?: number): void {
    const deferred = this.deferred;
    if (!deferred) {
      // Shown already, without the accepting process (the accept came after the wait): it is known now.
      if (pid && !this.isPidKnown && this.options.deferTap) {
        this.isPidKnown = true;
        if (pid !== this.info.pid) this.tap?.onProcess?.(pid);
        this.info.pid = pid;
      }
      return;
    }
    this.deferred = null;
    if (pid) {
      this.info.pid = pid;
      this.isPidKnown = true;
    }
    this.openTap();
    for (const item of deferred.items) {
      if (item.bytes) this.tapData(item.from, item.bytes, item.at);
      else this.tapEnd(item.from, item.at);
    }
    // Told only now: until the held bytes are parsed, another thread looking up this process's requests still waits.
    this.options.onRelease?.(this);
  }

  /** noDelay: TCP_NODELAY on this leg (always on loopback legs; a far leg mirrors the program's choice). */
  attach(side: Side, socket: Socket<LegData>, noDelay = true): void {
    const leg = this.legs[side];
    socket.data = { pipe: this, side };
    leg.socket = socket;
    socket.setNoDelay(noDelay);
    if (this.legs.client.socket && this.legs.server.socket && !this.isOpened) this.open();
    this.flush(side);
    if (this.isOpened && this.endsBeforeOpen.length > 0) {
      for (const from of this.endsBeforeOpen.splice(0)) this.tapEnd(from);
    }
  }

  /** The far side could not be reached: reset the side we have, as an unreachable peer would. */
  fail(reason: string): void {
    for (const side of ["client", "server"] as const) {
      const leg = this.legs[side];
      if (leg.socket && !leg.isClosed) leg.socket.terminate();
    }
    this.finish(reason);
  }

  private open(): void {
    this.isOpened = true;
    pipeStats.opened++;
    this.info.connectedAt ||= nowMicros();
    if (!this.deferred) this.openTap();
  }

  /** Takes over the tap of the relay that carried this connection so far (null: it had none); none is opened here. */
  adoptTap(tap: ConnectionTap | null): void {
    this.tap = tap;
    this.isTapAdopted = true;
  }

  private openTap(): void {
    if (!this.observer || this.tap || this.isTapAdopted) return;
    try {
      this.tap = this.observer.onOpen(this.info);
    } catch {
      pipeStats.tapErrors++;
      this.tap = null;
    }
  }

  private other(side: Side): Side {
    return side === "client" ? "server" : "client";
  }

  /** `wasTapped`: bytes the tap was already shown (by the relay that carried the connection before). */
  onData(from: Side, chunk: Uint8Array, wasTapped = false): void {
    const to = this.legs[this.other(from)];
    if (to.isClosed) return;
    if (to.socket && to.queue.length === 0) {
      // The client's bytes reach the program before the tap parses them: counted, for a lookup on another thread.
      const counter = from === "client" && !wasTapped ? this.options.forwarding : undefined;
      counter?.forwardBegin();
      // Read now: stamped before the write, so a thread descheduled after it cannot date the bytes after what the
      // program did with them.
      const readAt = wasTapped ? 0 : nowMicros();
      try {
        const written = to.socket.write(chunk);
        if (written < chunk.length) {
          this.enqueue(to, chunk.subarray(Math.max(0, written)), true);
          if (to.queuedBytes > HIGH_WATER) this.legs[from].socket?.pause();
        }
        if (!wasTapped) this.tapData(from, chunk, readAt);
      } finally {
        counter?.forwardEnd();
      }
      return;
    }
    const isTapped = this.isOpened || wasTapped;
    this.enqueue(to, chunk, isTapped);
    if (this.isOpened && !wasTapped) this.tapData(from, chunk);
    if (to.queuedBytes > HIGH_WATER) this.legs[from].socket?.pause();
  }

  /**
   * Shows the tap bytes that whoever relayed this connection before forwarded itself (a gate that answered a protocol's
   * request for TLS): they are not sent again.
   */
  observe(from: Side, chunk: Uint8Array): void {
    if (this.isOpened) this.tapData(from, chunk);
  }

  private enqueue(leg: Leg, bytes: Uint8Array, isTapped: boolean): void {
    leg.queue.push({ bytes, isTapped });
    leg.queuedBytes += bytes.length;
  }

  onDrain(side: Side): void {
    this.flush(side);
  }

  private flush(side: Side): void {
    const leg = this.legs[side];
    const socket = leg.socket;
    if (!socket || leg.isClosed) return;
    const from = this.other(side);
    while (leg.queue.length > 0) {
      const item = leg.queue[0]!;
      if (!item.isTapped && this.isOpened) {
        item.isTapped = true;
        this.tapData(from, item.bytes);
      }
      const written = socket.write(item.bytes);
      if (written < item.bytes.length) {
        if (written > 0) {
          item.bytes = item.bytes.subarray(written);
          leg.queuedBytes -= written;
        }
        return;
      }
      leg.queue.shift();
      leg.queuedBytes -= item.bytes.length;
    }
    const fromLeg = this.legs[from];
    if (fromLeg.socket && !fromLeg.isClosed && !fromLeg.isReadEnded) fromLeg.socket.resume();
    if (leg.isEndPending) this.shutWrite(side);
  }

  /** FIN from `from`: forward it to the other leg after its queue. */
  onEnd(from: Side): void {
    const fromLeg = this.legs[from];
    fromLeg.isReadEnded = true;
    // Before both legs are up the bytes are still queued untapped: the end is told after them.
    if (this.isOpened) this.tapEnd(from);
    else this.endsBeforeOpen.push(from);
    const to = this.other(from);
    const toLeg = this.legs[to];
    if (toLeg.queue.length > 0 || !toLeg.socket) toLeg.isEndPending = true;
    else this.shutWrite(to);
  }

  private shutWrite(side: Side): void {
    const leg = this.legs[side];
    leg.isEndPending = false;
    if (leg.isWriteShut || !leg.socket || leg.isClosed) return;
    leg.isWriteShut = true;
    leg.socket.shutdown();
    this.closeIfDone();
  }

  private closeIfDone(): void {
    const { client, server } = this.legs;
    if (client.isWriteShut && server.isWriteShut && client.isReadEnded && server.isReadEnded) {
      client.socket?.end();
      server.socket?.end();
    }
  }

  onClose(side: Side, error?: unknown): void {
    const leg = this.legs[side];
    if (leg.isClosed) return;
    leg.isClosed = true;
    const other = this.legs[this.other(side)];
    if (error || this.resetError) {
      // A reset on one side is passed on as a reset; the other side's close that this causes is part of it.
      const text = this.resetError ?? errorText(error);
      this.resetError = text;
      if (other.socket && !other.isClosed) other.socket.terminate();
      this.finish(text);
      return;
    }
    if (!leg.isReadEnded) this.onEnd(side);
    if (other.isClosed || !other.socket) {
      this.finish();
      return;
    }
    // The closed side can take no more bytes: stop the other side's unread data as the kernel would.
    if (leg.queue.length > 0 && !other.isReadEnded) other.socket.terminate();
    else if (other.queue.length === 0) other.socket.end();
  }

  private finish(error?: string): void {
    if (this.isFinished) return;
    this.release();
    this.isFinished = true;
    const tap = this.tap;
    this.tap = null;
    if (tap) {
      try {
        tap.onClose(nowMicros(), error);
      } catch {
        pipeStats.tapErrors++;
      }
    }
    this.onFinish?.();
  }

  onSocketClosed(side: Side, error?: unknown): void {
    this.onClose(side, error);
    const other = this.legs[this.other(side)];
    if (other.isClosed || !other.socket) this.finish(error ? errorText(error) : (this.resetError ?? undefined));
  }

  private tapData(from: Side, chunk: Uint8Array, readAt?: number): void {
    const now = nowMicros();
    const at = readAt ?? now;
    const deferred = this.deferred;
    if (deferred) {
      deferred.items.push({ from, bytes: chunk, at });
      deferred.size += chunk.length;
      if (deferred.size > DEFER_MAX_BYTES) this.release();
      return;
    }
    const tap = this.tap;
    if (!tap) return;
    try {
      tap.onData(from === "client", chunk, at);
    } catch {
      this.detachTap();
      return;
    }
    if (nowMicros() - now > TAP_BUDGET_MS * 1000) this.detachTap();
  }

  private tapEnd(from: Side, at = nowMicros()): void {
    if (this.deferred) {
      this.deferred.items.push({ from, bytes: null, at });
      return;
    }
    const tap = this.tap;
    if (!tap?.onEnd) return;
    try {
      tap.onEnd(from === "client", at);
    } catch {
      this.detachTap();
    }
  }

  private detachTap(): void {
    pipeStats.tapErrors++;
    const tap = this.tap;
    this.tap = null;
    try {
      tap?.onClose(nowMicros(), "tap detached: it failed or fell behind");
    } catch {}
  }
}

function errorText(error: unknown): string {
  if (error && typeof error === "object" && "code" in error) return String((error as { code: unknown }).code);
  return String(error);
}

/** One handler set for every relay socket; each socket's `data` names its pipe and side. */
export const legHandlers: SocketHandler<LegData> = {
  data(socket, chunk) {
    socket.data?.pipe.onData(socket.data.side, chunk);
  },
  drain(socket) {
    socket.data?.pipe.onDrain(socket.data.side);
  },
  end(socket) {
    socket.data?.pipe.onEnd(socket.data.side);
  },
  close(socket, error) {
    socket.data?.pipe.onSocketClosed(socket.data.side, error);
  },
  error(socket, error) {
    socket.data?.pipe.onSocketClosed(socket.data.side, error ?? "error");
  },
};
