import type { LiveClientMessage, LiveServerMessage } from "~/lib/protocol/live.ts";

export type SocketState = "connecting" | "open" | "reconnecting" | "expired" | "closed";

export type LiveSocketHandlers = {
  onMessage: (message: LiveServerMessage) => void;
  onState: (state: SocketState) => void;
  /** Called on every (re)open so the caller can resend its current config. */
  onOpen: () => void;
};

const MIN_RETRY_MS = 1000;
const MAX_RETRY_MS = 10_000;

/**
 * The frame's live socket: JSON messages of lib/protocol/live.ts, reconnecting with backoff after an
 * abnormal close; an expired link stops for good.
 */
export class LiveSocket {
  private ws: WebSocket | null = null;
  private retryMs = MIN_RETRY_MS;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private isStopped = false;
  private isExpired = false;

  /** `url` is asked again before each (re)connect: namespace tickets are single-use. */
  constructor(
    private readonly url: () => Promise<string>,
    private readonly handlers: LiveSocketHandlers,
  ) {}

  start() {
    this.isStopped = false;
    void this.connect("connecting");
  }

  stop() {
    this.isStopped = true;
    clearTimeout(this.timer);
    this.ws?.close(1000);
    this.ws = null;
    this.handlers.onState("closed");
  }

  get isOpen(): boolean {
    return this.ws?.readyState === WebSocket.OPEN;
  }

  send(message: LiveClientMessage): boolean {
    if (!this.ws || this.ws.readyState !== WebSocket.OPEN) return false;
    this.ws.send(JSON.stringify(message));
    return true;
  }

  private async connect(state: SocketState) {
    this.handlers.onState(state);
    let ws: WebSocket;
    try {
      const url = await this.url();
      if (this.isStopped) return;
      ws = new WebSocket(url);
    } catch {
      this.retryLater();
      return;
    }
    this.ws = ws;
    ws.onopen = () => {
      this.retryMs = MIN_RETRY_MS;
      this.handlers.onState("open");
      this.handlers.onOpen();
    };
    ws.onmessage = (event) => {
      if (typeof event.data !== "string") return;
      let message: LiveServerMessage;
      try {
        message = JSON.parse(event.data) as LiveServerMessage;
      } catch {
        return;
      }
      if (typeof message !== "object" || message === null || typeof message.type !== "string") return;
      if (message.type === "expired") {
        this.isExpired = true;
        this.handlers.onState("expired");
      }
      this.handlers.onMessage(message);
    };
    ws.onclose = () => {
      if (this.ws !== ws) return;
      this.ws = null;
      if (this.isStopped) return;
      if (this.isExpired) {
        this.handlers.onState("expired");
        return;
      }
      this.retryLater();
    };
  }

  private retryLater() {
    if (this.isStopped) return;
    this.handlers.onState("reconnecting");
    this.timer = setTimeout(() => void this.connect("reconnecting"), this.retryMs);
    this.retryMs = Math.min(this.retryMs * 2, MAX_RETRY_MS);
  }
}
