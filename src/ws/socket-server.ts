import type { Server, ServerWebSocket, WebSocketHandler } from "bun";
import type { ClientLimits } from "~/engines/limits/client-limits.ts";
import type { SocketKind, SocketLimits, SocketSlot } from "~/engines/limits/socket-limits.ts";
import { AppError } from "~/lib/errors.ts";
import { log } from "~/lib/server/logger.ts";

/** A frame as the socket delivered it: text as a string, binary as bytes. */
export type RawFrame = string | Buffer;

export type ChannelSocket = ServerWebSocket<SocketData>;

/**
 * One WebSocket channel: its kind (for the caps), the largest frame it takes, and its handlers. Frames reach
 * `message` as they arrived, never parsed: each channel bounds and parses its own.
 */
export type SocketChannel<C> = {
  kind: SocketKind;
  /** A bigger frame closes the socket (1009) before any handler sees it. */
  maxMessageBytes: number;
  open(socket: ChannelSocket, context: C): void;
  message?(socket: ChannelSocket, frame: RawFrame): void | Promise<void>;
  drain?(socket: ChannelSocket): void;
  close?(socket: ChannelSocket, code: number, reason: string): void;
};

export type SocketData = {
  channel: SocketChannel<unknown>;
  context: unknown;
  /** The client address the socket counts under (TRUST_PROXY decides it). */
  address: string;
  slot: SocketSlot | null;
  /** Set when a cap refused the socket: it is closed with this reason as soon as it opens. */
  refusal: string | null;
};

/**
 * Bun takes one frame limit for every socket of a server (and holds a frame whole before any handler sees it): what
 * the largest channel needs (a publisher's message, answered with an error up to twice its limit) and no more.
 * Each channel's own limit is checked below it; a worker's larger results come in parts.
 */
export const maxFrameBytes = 8 * 1024 * 1024;

/** The close code of a socket refused by a cap: 1013, "try again later". */
export const socketRefusedCode = 1013;

/** The close code of a frame over its channel's limit. */
export const messageTooBigCode = 1009;

type UpgradeContext = { request: Request; server: Server<unknown> | null; set: { headers: Record<string, unknown> } };

/**
 * The server's WebSockets on Bun's own API: Elysia routes authenticate the upgrade request, then `upgrade` hands
 * the socket to its channel under the caps of SocketLimits (per address, per link, in all), and `websocket` is
 * the one handler Bun calls for every socket (createApp passes it to listen). A socket over a cap is upgraded and
 * closed at once with 1013 and a reason, so a browser can tell the user why.
 */
export class SocketServer {
  constructor(private readonly deps: { limits: SocketLimits; clientLimits: ClientLimits }) {}

  /** For an Elysia GET handler: upgrades the request to `channel` (nothing to return), or throws BAD_REQUEST. */
  upgrade<C>(c: UpgradeContext, channel: SocketChannel<C>, context: C, options: { linkId?: string } = {}): undefined {
    if (channel.maxMessageBytes > maxFrameBytes) throw new Error(`${channel.kind}: its frame limit is above the server's`);
    const server = c.server;
    if (!server || c.request.headers.get("upgrade")?.toLowerCase() !== "websocket") {
      throw new AppError("BAD_REQUEST", "this endpoint takes a WebSocket upgrade");
    }
    const address = this.deps.clientLimits.addressOf(c.request, server);
    const admission = this.deps.limits.admit(channel.kind, address, options.linkId);
    const data: SocketData = {
      channel: channel as SocketChannel<unknown>,
      context,
      address,
      slot: admission.ok ? admission.slot : null,
      refusal: admission.ok ? null : admission.reason,
    };
    const headers = Object.fromEntries(Object.entries(c.set.headers).filter((e): e is [string, string] => typeof e[1] === "string"));
    if (!server.upgrade(c.request, { data, headers })) {
      data.slot?.release();
      throw new AppError("BAD_REQUEST", "this endpoint takes a WebSocket upgrade");
    }
    return undefined;
  }

  readonly websocket: WebSocketHandler<SocketData> = {
    maxPayloadLength: maxFrameBytes,
    open: (ws) => {
      const { channel, context, refusal } = ws.data;
      if (refusal !== null) {
        ws.close(socketRefusedCode, refusal);
        return;
      }
      guard(() => channel.open(ws, context));
    },
    message: (ws, frame) => {
      const { channel, refusal } = ws.data;
      if (refusal !== null) return;
      if (isOver(frame, channel.maxMessageBytes)) {
        ws.close(messageTooBigCode, `message too big (at most ${channel.maxMessageBytes} bytes on this socket)`);
        return;
      }
      guard(() => channel.message?.(ws, frame));
    },
    drain: (ws) => {
      if (ws.data.refusal === null) guard(() => ws.data.channel.drain?.(ws));
    },
    close: (ws, code, reason) => {
      ws.data.slot?.release();
      if (ws.data.refusal === null) guard(() => ws.data.channel.close?.(ws, code, reason));
    },
  };
}

function isOver(frame: RawFrame, limit: number): boolean {
  if (typeof frame !== "string") return frame.byteLength > limit;
  // A character is one to three UTF-8 bytes: counted exactly only where it could matter.
  if (frame.length > limit) return true;
  return frame.length * 3 > limit && Buffer.byteLength(frame) > limit;
}

/** A handler's failure is logged and goes no further: it never reaches Bun or another socket. */
function guard(run: () => void | Promise<void>): void {
  const failed = (err: unknown) => log.error("socket handler failed", { err });
  try {
    const done = run();
    if (done instanceof Promise) done.catch(failed);
  } catch (err) {
    failed(err);
  }
}
