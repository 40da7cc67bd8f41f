import { errorMessage, toError } from "~/lib/errors.ts";
import type { CreateTunnelResponse } from "~/lib/protocol/api/tunnel.ts";
import {
  type Compression,
  decodeResult,
  decodeResultData,
  encodeRequest,
  type TunnelResult,
  type TunnelResultData,
  type TunnelRole,
  type TunnelWant,
} from "~/lib/protocol/tunnel.ts";

/** A query the server answered with a tunnel or database error. */
export class TunnelQueryError extends Error {
  override name = "TunnelQueryError";
  constructor(
    message: string,
    readonly kind: "tunnel" | "database",
  ) {
    super(message);
  }
}

/** The server could not be reached, or refused to open a tunnel. */
export class TunnelConnectError extends Error {
  override name = "TunnelConnectError";
  constructor(
    message: string,
    readonly status?: number,
  ) {
    super(message);
  }
}

export type TunnelClientOptions = {
  /** The server's base URL (TAPSCOPE_ENDPOINT). */
  endpoint: string;
  /** A namespace token (or org token) sent as a bearer token. */
  token?: string;
  /** Extra headers for CreateTunnel (tests use a session cookie and Origin). */
  headers?: Record<string, string>;
  /** Omitted with a namespace token: the token's namespace. */
  namespaceId?: string;
  role?: TunnelRole;
  timeoutMs?: number;
};

type Waiter = {
  resolve: (r: TunnelResult) => void;
  reject: (e: Error) => void;
};

/** A query tunnel from the CLI (or a test) to the server: CreateTunnel, then binary requests on a WebSocket. */
export class TunnelClient {
  private readonly waiters = new Map<string, Waiter>();
  private readonly anonymous: Waiter[] = [];
  private seq = 0;
  private closeError: Error | null = null;

  private constructor(
    private readonly ws: WebSocket,
    readonly tunnelId: string,
    /** Sent as the requests' namespace tag when known. */
    readonly namespaceId?: string,
  ) {
    ws.binaryType = "arraybuffer";
    ws.onmessage = (ev) => {
      if (typeof ev.data === "string") return;
      let result: TunnelResult;
      try {
        result = decodeResult(new Uint8Array(ev.data as ArrayBuffer));
      } catch (err) {
        this.failAll(toError(err));
        return;
      }
      const w = this.waiters.get(result.queryId);
      if (w) {
        this.waiters.delete(result.queryId);
        w.resolve(result);
        return;
      }
      this.anonymous.shift()?.resolve(result);
    };
    ws.onclose = (ev) => this.failAll(new TunnelConnectError(`tunnel closed (${ev.code}${ev.reason ? `: ${ev.reason}` : ""})`));
  }

  private failAll(err: Error): void {
    this.closeError = err;
    for (const w of this.waiters.values()) w.reject(err);
    this.waiters.clear();
    for (const w of this.anonymous.splice(0)) w.reject(err);
  }

  static async createTunnel(options: TunnelClientOptions): Promise<CreateTunnelResponse> {
    const headers: Record<string, string> = {
      "content-type": "application/json",
      ...options.headers,
    };
    if (options.token) headers.authorization = `Bearer ${options.token}`;
    let res: Response;
    try {
      res = await fetch(`${options.endpoint}/api/CreateTunnel`, {
        method: "POST",
        headers,
        body: JSON.stringify({
          namespaceId: options.namespaceId,
          role: options.role ?? "SELECT",
        }),
        signal: AbortSignal.timeout(options.timeoutMs ?? 15_000),
      });
    } catch (err) {
      throw new TunnelConnectError(`cannot reach ${options.endpoint}: ${errorMessage(err)}`);
    }
    const body = (await res.json().catch(() => ({}))) as Partial<CreateTunnelResponse>;
    if (res.status !== 200 || !body.endpoint || !body.tunnel_id) {
      throw new TunnelConnectError(body.error ?? `CreateTunnel answered ${res.status}`, res.status);
    }
    return body as CreateTunnelResponse;
  }

  static async open(options: TunnelClientOptions): Promise<TunnelClient> {
    const created = await TunnelClient.createTunnel(options);
    return TunnelClient.connect(created.endpoint, created.tunnel_id, options.timeoutMs, options.namespaceId);
  }

  static connect(endpoint: string, tunnelId = "", timeoutMs = 15_000, namespaceId?: string): Promise<TunnelClient> {
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(endpoint);
      const timer = setTimeout(() => {
        ws.close();
        reject(new TunnelConnectError("tunnel did not open in time"));
      }, timeoutMs);
      ws.onopen = () => {
        clearTimeout(timer);
        resolve(new TunnelClient(ws, tunnelId, namespaceId));
      };
      ws.onerror = () => {
        clearTimeout(timer);
        reject(new TunnelConnectError("tunnel connection failed"));
      };
      ws.onclose = (ev) => {
        clearTimeout(timer);
        reject(new TunnelConnectError(`tunnel refused (${ev.code})`));
      };
    });
  }

  /** Sends one request and resolves with its raw result (errors inside). */
  async send(want: TunnelWant, options: { compression?: Compression; tags?: Record<string, string> } = {}): Promise<TunnelResult> {
    if (this.closeError) throw this.closeError;
    const queryId = `q${++this.seq}`;
    const frame = await encodeRequest({
      queryId,
      tags: options.tags ?? (this.namespaceId ? { namespaceId: this.namespaceId } : {}),
      compression: options.compression ?? "gzip",
      want,
    });
    return this.sendFrame(frame, queryId);
  }

  /** Sends any bytes; resolves with the result for queryId (or the next unlabelled one). */
  sendFrame(frame: Uint8Array, queryId?: string): Promise<TunnelResult> {
    if (this.closeError) return Promise.reject(this.closeError);
    return new Promise((resolve, reject) => {
      if (queryId) this.waiters.set(queryId, { resolve, reject });
      else this.anonymous.push({ resolve, reject });
      this.ws.send(frame);
    });
  }

  /** Sends one request and decodes its data; tunnel and database errors throw TunnelQueryError. */
  async query(want: TunnelWant, options: { compression?: Compression } = {}): Promise<TunnelResultData> {
    const result = await this.send(want, options);
    if (result.tunnelError) throw new TunnelQueryError(result.tunnelError, "tunnel");
    if (result.databaseError) throw new TunnelQueryError(result.databaseError, "database");
    return decodeResultData(result);
  }

  close(): void {
    this.ws.onclose = null;
    this.ws.close(1000);
  }
}
