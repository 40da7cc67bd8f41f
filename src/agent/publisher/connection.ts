import type { PublishServerMessage } from "~/lib/protocol/publish.ts";
import type { Backoff } from "./backoff.ts";
import { isRefusal, type JoinInfo, joinPublisher } from "./join.ts";

export type ReadyMessage = Extract<PublishServerMessage, { type: "ready" }>;

export type ConnectionHandlers = {
  /** The server is ready for events on a new socket; `isReconnect` after the first time. */
  onReady(ready: ReadyMessage, isReconnect: boolean): void;
  /** Every other message from the server. */
  onMessage(message: Exclude<PublishServerMessage, { type: "ready" }>): void;
  /** The socket closed (not by `close`); a reconnect follows if `canReconnect`. */
  onGone(): void;
  /** After every successful join (the first, and each reconnect). */
  onJoin?(info: JoinInfo): void;
  /** A reconnect's join was refused (token or link no longer valid): the connection gave up. */
  onRefused(error: Error): void;
  /** Asked before each reconnect; false while the publisher closes or after it stopped. */
  canReconnect(): boolean;
};

export type ConnectionTarget = { endpoint: string; token?: string; linkId?: string };

/**
 * The publish WebSocket: join (a ticket), connect, and when the socket goes, join again after the backoff's
 * delay, until refused or closed. One socket at a time; a socket that was replaced or closed is ignored.
 */
export class PublisherConnection {
  /** Reconnect attempts made. */
  reconnects = 0;
  private ws: WebSocket | null = null;
  private isReady = false;
  private hasBeenReady = false;
  private reconnectTimer: ReturnType<typeof setTimeout> | null = null;
  private linkId: string | undefined;

  constructor(
    private readonly target: ConnectionTarget,
    private readonly backoff: Backoff,
    private readonly handlers: ConnectionHandlers,
  ) {
    this.linkId = target.linkId;
  }

  /** The socket once the server said ready on it; null before, and while reconnecting. */
  get readySocket(): WebSocket | null {
    return this.isReady ? this.ws : null;
  }

  /** Whether a socket is open or opening (it may not be ready yet). */
  get hasSocket(): boolean {
    return this.ws !== null;
  }

  /** The first join; a failure that is not a refusal schedules a reconnect, and is thrown either way. */
  async join(): Promise<JoinInfo> {
    try {
      const { info, websocketUrl } = await this.joinOnce();
      this.handlers.onJoin?.(info);
      this.connect(websocketUrl);
      return info;
    } catch (err) {
      if (!isRefusal(err)) this.scheduleReconnect();
      throw err;
    }
  }

  /** Closes the socket and cancels any reconnect; `onGone` is not called for it. */
  close(): void {
    if (this.reconnectTimer) clearTimeout(this.reconnectTimer);
    this.reconnectTimer = null;
    const socket = this.ws;
    this.ws = null;
    this.isReady = false;
    socket?.close(1000);
  }

  private async joinOnce(): Promise<{ info: JoinInfo; websocketUrl: string }> {
    const joined = await joinPublisher(this.target.endpoint, this.target.token, this.linkId);
    if (joined.info.linkId) this.linkId = joined.info.linkId;
    return joined;
  }

  private connect(websocketUrl: string): void {
    const socket = new WebSocket(websocketUrl);
    socket.binaryType = "arraybuffer";
    this.ws = socket;
    socket.onmessage = (ev) => {
      if (this.ws !== socket) return;
      let message: PublishServerMessage;
      try {
        message = JSON.parse(typeof ev.data === "string" ? ev.data : new TextDecoder().decode(ev.data as ArrayBuffer));
      } catch {
        return;
      }
      if (message.type === "ready") {
        this.isReady = true;
        this.backoff.reset();
        const isReconnect = this.hasBeenReady;
        this.hasBeenReady = true;
        this.handlers.onReady(message, isReconnect);
      } else {
        this.handlers.onMessage(message);
      }
    };
    socket.onclose = () => this.onSocketGone(socket);
    socket.onerror = () => {
      // onclose follows.
    };
  }

  private onSocketGone(socket: WebSocket): void {
    if (this.ws !== socket) return;
    this.ws = null;
    this.isReady = false;
    this.handlers.onGone();
    this.scheduleReconnect();
  }

  private scheduleReconnect(): void {
    if (this.reconnectTimer || !this.handlers.canReconnect()) return;
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = null;
      this.reconnects++;
      this.joinOnce()
        .then(({ info, websocketUrl }) => {
          if (!this.handlers.canReconnect()) return;
          this.handlers.onJoin?.(info);
          this.connect(websocketUrl);
        })
        .catch((err: unknown) => {
          if (isRefusal(err)) {
            this.handlers.onRefused(err);
            return;
          }
          this.scheduleReconnect();
        });
    }, this.backoff.next());
    unref(this.reconnectTimer);
  }
}

function unref(timer: unknown): void {
  (timer as { unref?: () => void }).unref?.();
}
