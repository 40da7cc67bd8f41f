/**
 * A traced event: one HTTP exchange (or one non-HTTP connection), as the capture agent publishes it,
 * the server validates it, the store keeps it and the dashboard shows it. Defined once, here.
 * Column names are the product's event columns (specColumns), plus headers, bodies, timings, parent id and tags.
 */
export type TracedEvent = {
  /** Start of the request: microseconds since the Unix epoch. */
  time: number;
  /** UUID. */
  event_id: string;
  /** The inbound request that was in flight when this outbound call was made; "" when none. */
  parent_event_id: string;

  service: string;
  hostname: string;
  gcp_project: string;
  kubernetes_namespace: string;
  gke_cluster_location: string;
  gke_cluster_name: string;
  gke_node_name: string;
  process_id: number;
  process_executable_name: string;
  process_executable_size: number;
  process_command_line: string;
  process_user: string;

  /** "http" for an HTTP exchange, "tcp" for a connection of an unknown protocol. */
  protocol: "http" | "tcp";
  tls_server_name: string;
  /** "1.0", "1.1", "2". */
  http_version: string;
  http_is_outgoing: boolean;
  /** "ip:port" ("[v6]:port"): the real client and server, as the program would see them. */
  http_client_addr: string;
  http_server_addr: string;
  /** Microseconds from the first request byte to the last response byte. */
  http_duration: number;

  http_req_method: string;
  /** Path and query, as sent on the request line (redacted). */
  http_req_path: string;
  http_req_body_size_bytes_wire: number;
  http_req_transfer_encoding: string;
  http_req_content_type: string;
  http_req_content_encoding: string;
  /** -1 when absent. */
  http_req_content_length: number;
  http_req_host: string;
  http_req_x_forwarded_for: string;
  /** Header name/value pairs in wire order (redacted). */
  http_req_headers: Array<[string, string]>;
  /** Base64 of the kept sample (decoded when the content encoding could be decoded). */
  http_req_body: string;
  http_req_body_truncated: boolean;

  /** 0 when no response was seen (connection reset, program exited). */
  http_resp_status_code: number;
  http_resp_body_size_bytes_wire: number;
  http_resp_transfer_encoding: string;
  http_resp_content_type: string;
  http_resp_content_encoding: string;
  http_resp_content_length: number;
  http_resp_headers: Array<[string, string]>;
  http_resp_body: string;
  http_resp_body_truncated: boolean;

  /**
   * Latency breakdown in microseconds; -1 when it does not apply.
   * Outbound: connect, send (request), wait (to first response byte), receive (response).
   * Inbound: send = request receive, wait = processing until the first response byte, receive = response send.
   */
  timing_connect: number;
  /** The upstream TLS handshake (outbound, decrypted, first exchange on the connection); -1 otherwise. */
  timing_tls: number;
  timing_send: number;
  timing_wait: number;
  timing_receive: number;

  /** Bytes each way, for any connection (the only payload facts of a "tcp" event). */
  bytes_sent: number;
  bytes_received: number;

  /** Free-form extra tags. */
  tags: Record<string, string>;
};

/**
 * What the capture agent hands its publisher: a TracedEvent whose bodies may still be raw bytes. Bodies are
 * never base64'd on the capture path (that cost lands on the traced program's machine for every request);
 * the publish codec carries them as bytes and the server turns them into TracedEvent's base64.
 */
export type CapturedEvent = Omit<TracedEvent, "http_req_body" | "http_resp_body"> & {
  http_req_body: string | Uint8Array;
  http_resp_body: string | Uint8Array;
};

/** Base64 of a body that may still be bytes (anything else is passed on as it is: validation judges it). */
export function bodyBase64<T>(body: T | Uint8Array): T | string {
  if (!(body instanceof Uint8Array)) return body;
  return body.length === 0 ? "" : Buffer.from(body.buffer, body.byteOffset, body.length).toString("base64");
}

/**
 * How each field is kept, everywhere the fields are listed by kind (the store's columns, the publish batch's
 * sections): int, whole numbers; flag, booleans; string, text; json, header lists and tags. In the stores' table
 * order. A field added to TracedEvent is added here once.
 */
export type FieldKind = "int" | "flag" | "string" | "json";
export const eventFields = [
  ["time", "int"],
  ["event_id", "string"],
  ["parent_event_id", "string"],
  ["service", "string"],
  ["hostname", "string"],
  ["gcp_project", "string"],
  ["kubernetes_namespace", "string"],
  ["gke_cluster_location", "string"],
  ["gke_cluster_name", "string"],
  ["gke_node_name", "string"],
  ["process_id", "int"],
  ["process_executable_name", "string"],
  ["process_executable_size", "int"],
  ["process_command_line", "string"],
  ["process_user", "string"],
  ["protocol", "string"],
  ["tls_server_name", "string"],
  ["http_version", "string"],
  ["http_is_outgoing", "flag"],
  ["http_client_addr", "string"],
  ["http_server_addr", "string"],
  ["http_duration", "int"],
  ["http_req_method", "string"],
  ["http_req_path", "string"],
  ["http_req_body_size_bytes_wire", "int"],
  ["http_req_transfer_encoding", "string"],
  ["http_req_content_type", "string"],
  ["http_req_content_encoding", "string"],
  ["http_req_content_length", "int"],
  ["http_req_host", "string"],
  ["http_req_x_forwarded_for", "string"],
  ["http_req_headers", "json"],
  ["http_req_body", "string"],
  ["http_req_body_truncated", "flag"],
  ["http_resp_status_code", "int"],
  ["http_resp_body_size_bytes_wire", "int"],
  ["http_resp_transfer_encoding", "string"],
  ["http_resp_content_type", "string"],
  ["http_resp_content_encoding", "string"],
  ["http_resp_content_length", "int"],
  ["http_resp_headers", "json"],
  ["http_resp_body", "string"],
  ["http_resp_body_truncated", "flag"],
  ["timing_connect", "int"],
  ["timing_send", "int"],
  ["timing_wait", "int"],
  ["timing_receive", "int"],
  ["bytes_sent", "int"],
  ["bytes_received", "int"],
  ["tags", "json"],
  // Added after the first layout: kept last so tables made before it get it appended (`addedColumns` in src/store/table.ts).
  ["timing_tls", "int"],
] as const satisfies ReadonlyArray<readonly [keyof TracedEvent, FieldKind]>;

type FieldOfKind<K extends FieldKind> = Extract<(typeof eventFields)[number], readonly [string, K]>[0];

/** The fields of one kind, in table order. */
export function fieldsOfKind<K extends FieldKind>(kind: K): Array<FieldOfKind<K>> {
  return eventFields.filter((f) => f[1] === kind).map((f) => f[0]) as Array<FieldOfKind<K>>;
}

/**
 * About the length of an event's JSON without making it (the live history's byte bound before anyone asked
 * for the text): the variable parts plus the fixed keys and numbers.
 */
export function estimateJsonLength(e: TracedEvent): number {
  let n = 1100 + e.event_id.length + e.parent_event_id.length + e.service.length + e.hostname.length;
  n += e.http_client_addr.length + e.http_server_addr.length + e.http_req_host.length + e.process_command_line.length;
  n += e.http_req_path.length + e.http_req_body.length + e.http_resp_body.length;
  for (const [name, value] of e.http_req_headers) n += name.length + value.length + 6;
  for (const [name, value] of e.http_resp_headers) n += name.length + value.length + 6;
  for (const key in e.tags) n += key.length + (e.tags[key]?.length ?? 0) + 6;
  return n;
}

/** A captured event as the rest of the system sees it: bodies base64'd. Never throws, whatever the fields hold. */
export function toTracedEvent(e: CapturedEvent): TracedEvent {
  if (!(e.http_req_body instanceof Uint8Array) && !(e.http_resp_body instanceof Uint8Array)) return e as TracedEvent;
  return { ...e, http_req_body: bodyBase64(e.http_req_body), http_resp_body: bodyBase64(e.http_resp_body) } as TracedEvent;
}

/** The product's event column names, in their documented order: what `tapscope query --format json` prints. */
export const specColumns = [
  "time",
  "event_id",
  "service",
  "hostname",
  "gcp_project",
  "kubernetes_namespace",
  "gke_cluster_location",
  "gke_cluster_name",
  "gke_node_name",
  "process_id",
  "process_executable_name",
  "process_executable_size",
  "process_command_line",
  "process_user",
  "protocol",
  "tls_server_name",
  "http_version",
  "http_is_outgoing",
  "http_client_addr",
  "http_server_addr",
  "http_duration",
  "http_req_method",
  "http_req_path",
  "http_req_body_size_bytes_wire",
  "http_req_transfer_encoding",
  "http_req_content_type",
  "http_req_content_encoding",
  "http_req_content_length",
  "http_req_host",
  "http_req_x_forwarded_for",
  "http_resp_status_code",
  "http_resp_body_size_bytes_wire",
  "http_resp_transfer_encoding",
  "http_resp_content_type",
  "http_resp_content_encoding",
  "http_resp_content_length",
] as const satisfies ReadonlyArray<keyof TracedEvent>;
