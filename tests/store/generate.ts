import { neutralEvent, type TracedEvent, type UnansweredReason, unansweredReasons } from "~/lib/protocol/event.ts";
import { templatePath } from "~/lib/routes/template.ts";

/** Small deterministic PRNG (mulberry32): the same seed gives the same events on every engine. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function uuid(rand: () => number): string {
  const h = Array.from({ length: 32 }, () => Math.floor(rand() * 16).toString(16)).join("");
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-a${h.slice(17, 20)}-${h.slice(20)}`;
}

function pick<T>(rand: () => number, weighted: ReadonlyArray<readonly [T, number]>): T {
  const total = weighted.reduce((s, [, w]) => s + w, 0);
  let r = rand() * total;
  for (const [v, w] of weighted) {
    r -= w;
    if (r < 0) return v;
  }
  return weighted[weighted.length - 1]![0];
}

export const methods = [
  ["GET", 70],
  ["POST", 18],
  ["PUT", 5],
  ["DELETE", 4],
  ["PATCH", 3],
] as const;
export const statuses = [
  [200, 70],
  [201, 6],
  [204, 4],
  [301, 1],
  [304, 3],
  [400, 3],
  [401, 2],
  [403, 1],
  [404, 4],
  [429, 1],
  [500, 3],
  [502, 1],
  [503, 1],
] as const;
export const routes = [
  ["/api/users/{id}", 20],
  ["/api/users/{id}/orders", 8],
  ["/api/orders/{id}", 12],
  ["/api/orders", 8],
  ["/api/products?page={n}", 10],
  ["/api/search?q=shoes&page={n}", 6],
  ["/health", 10],
  ["/metrics", 4],
  ["/static/app.{id}.js", 6],
  ["/login", 3],
  ["/api/cart/{id}/items", 6],
  ["/v1/payments/{id}/capture", 3],
] as const;
export const services = [
  ["api", 60],
  ["checkout", 20],
  ["search", 15],
  ["auth", 5],
] as const;
const contentTypes = [
  ["application/json", 80],
  ["text/html; charset=utf-8", 10],
  ["application/javascript", 10],
] as const;

function duration(rand: () => number): number {
  // Log-normal around 20 ms with a long tail (about 3% above 500 ms).
  const u = Math.max(rand(), 1e-9);
  const v = rand();
  const z = Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
  return Math.max(50, Math.round(Math.exp(Math.log(20_000) + 1.6 * z)));
}

function headers(rand: () => number, n: number, extra: Array<[string, string]>): Array<[string, string]> {
  const out: Array<[string, string]> = [...extra];
  for (let i = out.length; i < n; i++) out.push([`x-header-${i}`, Math.floor(rand() * 1e12).toString(36)]);
  return out;
}

export type GenerateOptions = {
  count: number;
  startMicros: number;
  endMicros: number;
  seed?: number;
  /** Fraction of events that are outbound children of an earlier inbound event. */
  childRatio?: number;
  /** Bytes of body sample (before base64) per event, at most. */
  bodyBytes?: number;
};

const tlsCases: ReadonlyArray<Record<string, string>> = [
  { tls: "decrypted", tls_alpn: "h2" },
  { tls: "decrypted", tls_alpn: "http/1.1" },
  { tls: "not decrypted", tls_reason: "mutual TLS" },
  { tls: "not decrypted", tls_reason: "upstream certificate not trusted", tls_detail: "unable to get local issuer certificate" },
  {},
];

/** A TLS connection the relay did not decrypt is a tcp event: bytes each way, no HTTP. */
/** A request that waited its whole duration and got no response. */
function unanswered(e: TracedEvent, reason: UnansweredReason): void {
  Object.assign(e, {
    http_unanswered: reason,
    http_resp_status_code: 0,
    http_resp_headers: [],
    http_resp_body: "",
    http_resp_body_truncated: false,
    http_resp_content_type: "",
    http_resp_content_length: -1,
    http_resp_transfer_encoding: "",
    http_resp_body_size_bytes_wire: 0,
    timing_wait: e.http_duration - e.timing_send,
    timing_receive: -1,
    bytes_received: 0,
  } satisfies Partial<TracedEvent>);
}

function passThrough(e: TracedEvent): void {
  Object.assign(e, {
    protocol: "tcp",
    http_version: "",
    http_req_method: "",
    http_req_path: "",
    http_route: "",
    http_req_host: "",
    http_req_headers: [],
    http_req_body: "",
    http_req_body_truncated: false,
    http_req_content_type: "",
    http_req_content_length: -1,
    http_req_body_size_bytes_wire: 0,
    http_resp_status_code: 0,
    http_resp_headers: [],
    http_resp_body: "",
    http_resp_body_truncated: false,
    http_resp_content_type: "",
    http_resp_content_length: -1,
    http_resp_transfer_encoding: "",
    http_resp_body_size_bytes_wire: 0,
    timing_send: -1,
    timing_wait: -1,
    timing_receive: -1,
  } satisfies Partial<TracedEvent>);
}

const dbCalls: ReadonlyArray<Partial<TracedEvent>> = [
  {
    db_system: "postgresql",
    db_statement: "SELECT id, total FROM orders WHERE customer_id = $1",
    db_statement_normalized: "SELECT id, total FROM orders WHERE customer_id = $1",
    db_operation: "SELECT",
    db_parameters: [["$1", "42"]],
    db_rows: 3,
    http_server_addr: "10.0.0.5:5432",
  },
  {
    db_system: "postgresql",
    db_statement: "INSERT INTO users (email) VALUES ('a@example.com')",
    db_statement_normalized: "INSERT INTO users (email) VALUES (?)",
    db_operation: "INSERT",
    db_error_code: "23505",
    db_error_message: 'duplicate key value violates unique constraint "users_email_key"',
    http_server_addr: "10.0.0.5:5432",
  },
  {
    db_system: "mysql",
    db_statement: "UPDATE carts SET items = ? WHERE id = ?",
    db_statement_normalized: "UPDATE carts SET items = ? WHERE id = ?",
    db_operation: "UPDATE",
    db_rows: 1,
    http_server_addr: "10.0.0.6:3306",
  },
  {
    db_system: "redis",
    db_statement: "GET session:{n}",
    db_statement_normalized: "GET session:?",
    db_operation: "GET",
    http_server_addr: "10.0.0.7:6379",
  },
  {
    db_system: "redis",
    db_statement: "HSET cart:{n} qty 2",
    db_statement_normalized: "HSET cart:? ? ?",
    db_operation: "HSET",
    db_error_code: "WRONGTYPE",
    db_error_message: "WRONGTYPE Operation against a key holding the wrong kind of value",
    http_server_addr: "10.0.0.7:6379",
  },
];

/** An outbound call made into a database call (kind "db"): a statement where the URL was, no HTTP. */
function databaseCall(e: TracedEvent, i: number): void {
  const call = dbCalls[Math.floor(i / 10) % dbCalls.length]!;
  passThrough(e);
  Object.assign(e, {
    db_name: "shop",
    db_user: "app",
    db_rows: -1,
    ...call,
    db_statement: call.db_statement!.replace("{n}", String(i)),
    protocol: "db",
    tls_server_name: "",
    timing_send: Math.floor(e.http_duration * 0.1),
    timing_wait: Math.floor(e.http_duration * 0.8),
    timing_receive: Math.floor(e.http_duration * 0.1),
    tags: {},
  } satisfies Partial<TracedEvent>);
}

/** Realistic events spread evenly (with jitter) over [startMicros, endMicros), oldest first. */
export function generateEvents(options: GenerateOptions): TracedEvent[] {
  const rand = prng(options.seed ?? 1);
  const span = options.endMicros - options.startMicros;
  const out: TracedEvent[] = [];
  const recentInbound: TracedEvent[] = [];
  const bodyMax = options.bodyBytes ?? 512;
  for (let i = 0; i < options.count; i++) {
    const time = options.startMicros + Math.floor(((i + rand()) / options.count) * span);
    const isChild = recentInbound.length > 0 && rand() < (options.childRatio ?? 0.1);
    const parent = isChild ? recentInbound[Math.floor(rand() * recentInbound.length)]! : undefined;
    const method = pick(rand, methods);
    const status = pick(rand, statuses);
    const path = pick(rand, routes)
      .replace("{id}", String(Math.floor(rand() * 100_000)))
      .replace("{n}", String(1 + Math.floor(rand() * 20)));
    const ct = pick(rand, contentTypes);
    const reqBody = method === "GET" ? 0 : Math.floor(rand() * bodyMax);
    const respBody = Math.floor(rand() * bodyMax);
    const dur = duration(rand);
    // Outbound calls cycle through decrypted, not decrypted and plaintext (by index: the random sequence stays as it was).
    const tls = isChild ? tlsCases[i % tlsCases.length]! : null;
    const event: TracedEvent = {
      ...neutralEvent(),
      time,
      event_id: uuid(rand),
      parent_event_id: parent?.event_id ?? "",
      service: parent?.service ?? pick(rand, services),
      hostname: `host-${Math.floor(rand() * 8)}`,
      gcp_project: "",
      kubernetes_namespace: "default",
      gke_cluster_location: "",
      gke_cluster_name: "",
      gke_node_name: "",
      process_id: 1000 + Math.floor(rand() * 50),
      process_executable_name: "node",
      process_executable_size: 98_000_000,
      process_command_line: "node server.js --port 8080",
      process_user: "app",
      protocol: "http",
      tls_server_name: isChild ? "api.stripe.com" : "",
      http_version: rand() < 0.8 ? "1.1" : "2",
      http_is_outgoing: isChild,
      http_client_addr: `10.0.${Math.floor(rand() * 255)}.${Math.floor(rand() * 255)}:${30000 + Math.floor(rand() * 30000)}`,
      http_server_addr: isChild ? "34.1.2.3:443" : "10.0.0.2:8080",
      http_duration: dur,
      http_req_method: method,
      http_req_path: path,
      http_req_body_size_bytes_wire: reqBody,
      http_req_transfer_encoding: "",
      http_req_content_type: reqBody ? "application/json" : "",
      http_req_content_encoding: "",
      http_req_content_length: reqBody || -1,
      http_req_host: isChild ? "api.stripe.com" : "shop.example.com",
      http_req_x_forwarded_for: "",
      http_req_headers: headers(rand, 6 + Math.floor(rand() * 10), [
        ["host", isChild ? "api.stripe.com" : "shop.example.com"],
        ["user-agent", "Mozilla/5.0 (X11; Linux x86_64)"],
      ]),
      http_req_body: reqBody ? Buffer.alloc(Math.min(reqBody, 256), 97).toString("base64") : "",
      http_req_body_truncated: reqBody > 256,
      http_resp_status_code: status,
      http_resp_body_size_bytes_wire: respBody,
      http_resp_transfer_encoding: respBody > 400 ? "chunked" : "",
      http_resp_content_type: ct,
      http_resp_content_encoding: "",
      http_resp_content_length: respBody > 400 ? -1 : respBody,
      http_resp_headers: headers(rand, 4 + Math.floor(rand() * 8), [["content-type", ct]]),
      http_resp_body: respBody ? Buffer.alloc(Math.min(respBody, 256), 98).toString("base64") : "",
      http_resp_body_truncated: respBody > 256,
      timing_connect: isChild ? Math.floor(dur * 0.1) : -1,
      timing_tls: tls?.tls === "decrypted" ? Math.floor(dur * 0.05) : -1,
      timing_send: Math.floor(dur * 0.05),
      timing_wait: Math.floor(dur * 0.8),
      timing_receive: Math.floor(dur * 0.05),
      bytes_sent: 300 + reqBody,
      bytes_received: 200 + respBody,
      // As ingest gives it (without a namespace's guard or patterns).
      http_route: templatePath(path),
      tags: isChild
        ? { kind: "outbound", ...tls }
        : {
            region: pick(rand, [
              ["eu", 1],
              ["us", 1],
            ] as const),
          },
    };
    if (tls?.tls === "not decrypted") passThrough(event);
    // Half of the plaintext outbound calls are database calls (by index, as the TLS cases).
    if (isChild && i % 10 === 4) databaseCall(event, i);
    // Every 23rd inbound request got no answer, each reason in turn (by index: the random sequence stays as it was).
    if (!isChild && i % 23 === 7) unanswered(event, unansweredReasons[Math.floor(i / 23) % unansweredReasons.length]!);
    out.push(event);
    if (!isChild) {
      recentInbound.push(event);
      if (recentInbound.length > 50) recentInbound.shift();
    }
  }
  return out;
}

const wsTexts = [
  '{"type":"quote","symbol":"ACME","price":101.5}',
  '{"type":"order","id":42,"side":"buy"}',
  "ping from the client",
  "héllo wörld",
];
const wsOpcodes = ["text", "text", "binary", "ping", "pong", "close"] as const;

/**
 * Turns `e` into a WebSocket message (protocol "ws") made from its index alone, so the random sequence of the events
 * around it stays as it was.
 */
export function asWebSocketMessage(e: TracedEvent, index: number): void {
  const opcode = wsOpcodes[index % wsOpcodes.length]!;
  const text = opcode === "text" || opcode === "close" ? wsTexts[index % wsTexts.length]! : "";
  const payload = opcode === "binary" ? Buffer.from([index & 255, 0, 255]).toString("base64") : "";
  Object.assign(e, {
    ...neutralEvent(),
    time: e.time,
    event_id: e.event_id,
    parent_event_id: e.parent_event_id,
    service: e.service,
    hostname: e.hostname,
    process_id: e.process_id,
    process_executable_name: e.process_executable_name,
    protocol: "ws",
    http_version: "1.1",
    http_client_addr: e.http_client_addr,
    http_server_addr: e.http_server_addr,
    ws_direction: index % 2 === 0 ? "client" : "server",
    ws_opcode: opcode,
    ws_message: text,
    ws_payload: payload,
    ws_size: Buffer.byteLength(text) + (payload ? 3 : 0),
    ws_wire_size: Buffer.byteLength(text) + 6,
    ws_is_compressed: index % 3 === 0,
    ws_close_code: opcode === "close" ? 1000 : -1,
    ws_dropped: opcode === "close" ? index % 7 : 0,
  } satisfies Partial<TracedEvent>);
}
