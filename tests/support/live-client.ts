import { connect, type Socket } from "node:net";
import type { LiveServerMessage } from "~/lib/protocol/live.ts";

/** A browser-like live client over a real WebSocket: collects messages, waits for conditions. */
export class LiveClient {
  readonly messages: LiveServerMessage[] = [];
  readonly texts: string[] = [];
  closeCode: number | null = null;
  closeReason: string | null = null;
  private waiters: Array<() => void> = [];

  constructor(readonly ws: WebSocket) {
    ws.onmessage = (m) => {
      const text = String(m.data);
      this.texts.push(text);
      try {
        this.messages.push(JSON.parse(text));
      } catch {
        // not JSON ("pong")
      }
      this.wake();
    };
    ws.onclose = (e) => {
      this.closeCode = e.code;
      this.closeReason = e.reason;
      this.wake();
    };
  }

  static open(url: string): Promise<LiveClient> {
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(url);
      const client = new LiveClient(ws);
      ws.onopen = () => resolve(client);
      ws.onerror = () => reject(new Error(`websocket refused: ${url}`));
    });
  }

  private wake(): void {
    for (const w of this.waiters.splice(0)) w();
  }

  async until(check: () => boolean, what: string, timeoutMs = 5000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!check()) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await new Promise<void>((resolve) => {
        this.waiters.push(resolve);
        setTimeout(resolve, 50);
      });
    }
  }

  of<T extends LiveServerMessage["type"]>(type: T): Extract<LiveServerMessage, { type: T }>[] {
    return this.messages.filter((m): m is Extract<LiveServerMessage, { type: T }> => m.type === type);
  }

  paths(): string[] {
    return this.of("events").flatMap((m) => m.events.map((e) => e.http_req_path));
  }

  send(value: unknown): void {
    this.ws.send(typeof value === "string" ? value : JSON.stringify(value));
  }

  close(): void {
    this.ws.close();
  }
}

/** Whether a WebSocket upgrade is refused (the server answers the handshake with an error status). */
export function isRefused(url: string): Promise<boolean> {
  return new Promise((resolve) => {
    const ws = new WebSocket(url);
    ws.onopen = () => {
      ws.close();
      resolve(false);
    };
    ws.onerror = () => resolve(true);
  });
}

/**
 * A WebSocket client on a raw TCP socket that can stop reading (pause), so the kernel buffers fill and the
 * server sees real backpressure: a slow viewer on a bad network.
 */
export class RawWsClient {
  private buffer = Buffer.alloc(0);
  private isUpgraded = false;
  readonly messages: LiveServerMessage[] = [];
  /** From the server's close frame, once read. */
  closeCode: number | null = null;
  closeReason = "";
  /** The connection ended (with or without a close frame). */
  isEnded = false;
  private constructor(readonly socket: Socket) {}

  static open(port: number, path: string): Promise<RawWsClient> {
    return new Promise((resolve, reject) => {
      const socket = connect(port, "127.0.0.1");
      const client = new RawWsClient(socket);
      socket.on("error", reject);
      socket.on("close", () => {
        client.isEnded = true;
      });
      socket.on("connect", () => {
        socket.write(
          `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
            `Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n`,
        );
      });
      socket.on("data", (chunk: Buffer) => {
        client.buffer = Buffer.concat([client.buffer, chunk]);
        if (!client.isUpgraded) {
          const end = client.buffer.indexOf("\r\n\r\n");
          if (end < 0) return;
          const head = client.buffer.subarray(0, end).toString();
          if (!head.startsWith("HTTP/1.1 101")) return reject(new Error(head.split("\r\n")[0]));
          client.isUpgraded = true;
          client.buffer = client.buffer.subarray(end + 4);
          resolve(client);
        }
        client.parseFrames();
      });
    });
  }

  private parseFrames(): void {
    for (;;) {
      const b = this.buffer;
      if (b.length < 2) return;
      let len = b[1]! & 0x7f;
      let offset = 2;
      if (len === 126) {
        if (b.length < 4) return;
        len = b.readUInt16BE(2);
        offset = 4;
      } else if (len === 127) {
        if (b.length < 10) return;
        len = Number(b.readBigUInt64BE(2));
        offset = 10;
      }
      if (b.length < offset + len) return;
      const opcode = b[0]! & 0x0f;
      if (opcode === 1) this.messages.push(JSON.parse(b.subarray(offset, offset + len).toString()));
      if (opcode === 8 && len >= 2) {
        this.closeCode = b.readUInt16BE(offset);
        this.closeReason = b.subarray(offset + 2, offset + len).toString();
      }
      this.buffer = b.subarray(offset + len);
    }
  }

  pause(): void {
    this.socket.pause();
  }

  resume(): void {
    this.socket.resume();
  }

  of<T extends LiveServerMessage["type"]>(type: T): Extract<LiveServerMessage, { type: T }>[] {
    return this.messages.filter((m): m is Extract<LiveServerMessage, { type: T }> => m.type === type);
  }

  destroy(): void {
    this.socket.destroy();
  }
}
