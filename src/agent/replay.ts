import { randomUUID } from "node:crypto";
import { request as httpRequest, type IncomingMessage } from "node:http";
import { request as httpsRequest } from "node:https";
import { type CapturedEvent, neutralEvent } from "~/lib/protocol/event.ts";
import { type ReplayAnswer, type ReplayOrder, replayLimits } from "~/lib/protocol/replay.ts";
import type { HostMetadata } from "./event.ts";
import { type RedactMode, redactHeader, redactTarget } from "./redact.ts";

export type ReplayContext = {
  host: HostMetadata;
  service: string;
  redact: RedactMode;
  payloadLimit: number;
  /** An inbound replay's connection is open, from this address (as the relay will name its client). */
  onConnected?: (clientAddress: string) => void;
};

/** "127.0.0.1:8080", "[::1]:8080", "api.example.com:443" -> host and port; null when it is not one. */
export function splitAddress(address: string): { host: string; port: number } | null {
  const m = /^\[([0-9a-fA-F:.]+)\]:(\d{1,5})$/.exec(address) ?? /^([^:\s[\]]+):(\d{1,5})$/.exec(address);
  if (!m) return null;
  const port = Number(m[2]);
  return port > 0 && port < 65536 ? { host: m[1]!, port } : null;
}

const nowUs = () => Math.round((performance.timeOrigin + performance.now()) * 1000);

/**
 * Sends a replay order's request itself, to the order's target only (the server read it from the original event), and
 * makes the exchange an event marked as a replay (`replay_of`), redacted as the run's own events are. Never throws:
 * a failure is the answer's error. The response body is kept up to the order's bound; the rest is read and dropped.
 */
export async function sendReplay(order: ReplayOrder, ctx: ReplayContext): Promise<{ answer: ReplayAnswer; event: CapturedEvent | null }> {
  const failed = (error: string) => ({ answer: { type: "replayed", id: order.id, ok: false, error } as const, event: null });
  const address = splitAddress(order.target.address);
  if (!address) return failed(`"${order.target.address.slice(0, 100)}" is not an address this run can send to`);
  if (!order.path.startsWith("/")) return failed("the path must start with /");
  const body = Buffer.from(order.body, "base64");
  if (body.length > replayLimits.maxBodyBytes) return failed("the body is over the replay limit");
  const headers: Array<[string, string]> = [["Host", order.target.host || order.target.address]];
  for (const [name, value] of order.headers) if (name.toLowerCase() !== "host") headers.push([name, value]);
  if (body.length > 0 || !["GET", "HEAD", "DELETE", "OPTIONS"].includes(order.method))
    headers.push(["Content-Length", String(body.length)]);

  const startedUs = nowUs();
  const isTls = order.target.isTls;
  const isInbound = order.target.direction === "inbound";
  try {
    const { response, localAddress } = await new Promise<{ response: IncomingMessage; localAddress: string }>((resolve, reject) => {
      const options = {
        host: address.host,
        port: address.port,
        method: order.method,
        path: order.path,
        headers: headerObject(headers),
        setHost: false,
        timeout: replayLimits.runTimeoutMs,
        agent: false as const,
        ...(isTls
          ? {
              servername: order.target.serverName || undefined,
              // The program's own listener, on this machine, answers with its own certificate; a host it called is
              // verified against the system's CAs, as the program's own call was.
              rejectUnauthorized: !isInbound,
            }
          : {}),
      };
      const req = (isTls ? httpsRequest : httpRequest)(options, (res) => {
        resolve({ response: res, localAddress: socketAddress(res.socket) });
      });
      req.on("socket", (socket) => {
        const connected = () => ctx.onConnected?.(socketAddress(socket));
        if (socket.localPort) connected();
        else socket.once("connect", connected);
      });
      req.on("timeout", () => req.destroy(new Error(`no response within ${replayLimits.runTimeoutMs / 1000} s`)));
      req.on("error", reject);
      req.end(body);
    });
    const chunks: Buffer[] = [];
    let kept = 0;
    let wire = 0;
    const responseStartUs = nowUs();
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => response.destroy(new Error("the response body took too long")), replayLimits.runTimeoutMs);
      response.on("data", (chunk: Buffer) => {
        wire += chunk.length;
        const room = replayLimits.maxResponseBodyBytes - kept;
        if (room <= 0) return;
        const part = chunk.length > room ? chunk.subarray(0, room) : chunk;
        chunks.push(part);
        kept += part.length;
      });
      response.on("end", () => {
        clearTimeout(timer);
        resolve();
      });
      response.on("error", (err) => {
        clearTimeout(timer);
        reject(err);
      });
    });
    const endUs = nowUs();
    const responseBody = Buffer.concat(chunks);
    const responseHeaders: Array<[string, string]> = [];
    for (let i = 0; i + 1 < response.rawHeaders.length; i += 2)
      responseHeaders.push([response.rawHeaders[i]!, response.rawHeaders[i + 1]!]);

    const e = neutralEvent() as CapturedEvent;
    e.event_id = randomUUID();
    e.replay_of = order.replayOf;
    e.time = startedUs;
    e.service = ctx.service;
    e.hostname = ctx.host.hostname;
    e.process_executable_name = "tapscope";
    e.protocol = "http";
    e.http_version = `1.${response.httpVersionMinor}`;
    e.http_is_outgoing = !isInbound;
    e.http_client_addr = localAddress;
    e.http_server_addr = order.target.address;
    if (isTls) {
      e.tls_server_name = order.target.serverName;
      e.tags.tls = "decrypted";
    }
    e.http_duration = Math.max(1, endUs - startedUs);
    e.timing_wait = Math.max(0, responseStartUs - startedUs);
    e.timing_receive = Math.max(0, endUs - responseStartUs);
    e.http_req_method = order.method;
    e.http_req_path = redactTarget(order.path, ctx.redact);
    e.http_req_host = order.target.host;
    e.http_req_headers = headers.map(([n, v]) => [n.toLowerCase(), redactHeader(n, v, ctx.redact)]);
    e.http_req_content_type = headerValue(headers, "content-type");
    e.http_req_content_length = body.length;
    e.http_req_body_size_bytes_wire = body.length;
    e.http_req_body = body.subarray(0, ctx.payloadLimit);
    e.http_req_body_truncated = body.length > ctx.payloadLimit;
    e.bytes_sent = body.length;
    e.http_resp_status_code = response.statusCode ?? 0;
    e.http_resp_headers = responseHeaders.map(([n, v]) => [n.toLowerCase(), redactHeader(n, v, ctx.redact)]);
    e.http_resp_content_type = headerValue(responseHeaders, "content-type");
    e.http_resp_content_encoding = headerValue(responseHeaders, "content-encoding");
    const length = Number(headerValue(responseHeaders, "content-length") || -1);
    e.http_resp_content_length = Number.isSafeInteger(length) && length >= 0 ? length : -1;
    e.http_resp_body_size_bytes_wire = wire;
    e.http_resp_body = responseBody.subarray(0, ctx.payloadLimit);
    e.http_resp_body_truncated = wire > Math.min(ctx.payloadLimit, responseBody.length);
    e.bytes_received = wire;
    return {
      answer: {
        type: "replayed",
        id: order.id,
        ok: true,
        eventId: e.event_id,
        status: e.http_resp_status_code,
        headers: responseHeaders.slice(0, replayLimits.maxHeaders),
        body: responseBody.toString("base64"),
        isBodyTruncated: wire > responseBody.length,
        durationUs: e.http_duration,
      },
      event: e,
    };
  } catch (err) {
    return failed(err instanceof Error ? err.message : String(err));
  }
}

function headerValue(headers: Array<[string, string]>, name: string): string {
  for (const [n, v] of headers) if (n.toLowerCase() === name) return v;
  return "";
}

/** Repeated names joined as one value, as HTTP allows for request headers. */
function headerObject(headers: Array<[string, string]>): Record<string, string> {
  const out: Record<string, string> = {};
  const names = new Map<string, string>();
  for (const [name, value] of headers) {
    const lower = name.toLowerCase();
    const seen = names.get(lower);
    if (seen === undefined) {
      names.set(lower, name);
      out[name] = value;
    } else out[seen] = `${out[seen]}, ${value}`;
  }
  return out;
}

function socketAddress(socket: { localAddress?: string; localPort?: number } | null | undefined): string {
  if (!socket?.localAddress || !socket.localPort) return "";
  const ip = socket.localAddress.replace(/^::ffff:(?=\d+\.)/, "");
  return ip.includes(":") ? `[${ip}]:${socket.localPort}` : `${ip}:${socket.localPort}`;
}
