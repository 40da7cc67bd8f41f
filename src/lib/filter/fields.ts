import { eventKinds, unansweredReasons } from "~/lib/protocol/event.ts";
import { dbSystems, type FilterOp, tlsStates, wsDirections, wsOpcodes } from "./ast.ts";

/**
 * The filter language's fields: what each readable name is, which operators it takes and what values. The column a
 * name reads is on its row of the event field table (`filter`, ADR 0030); the tags the TLS fields read and the keyed
 * fields are described here. The parser, the live evaluator, the SQL compiler, the explorer's autocomplete and
 * docs/site/filters.md all follow this list, and a test holds each to it.
 */
export type FieldKind =
  /** Text compared as text: ==, !=, startsWith, endsWith, contains, icontains, matches. */
  | "text"
  /** An HTTP method, compared case-insensitively. */
  | "method"
  /** A response status code, 0-999. */
  | "status"
  /** A whole number. */
  | "number"
  /** Bytes: `512`, `10KB`, `1.5MiB`. */
  | "size"
  /** Microseconds in the event; written `800us`, `250ms`, `1.5s` (a bare number is milliseconds). */
  | "duration"
  /** One of a few quoted values. */
  | "enum"
  /** true or false. */
  | "flag"
  /** A body's text (search_*_body): contains, icontains, matches, ==, !=. */
  | "body"
  /** A side's headers: keyed (`request.headers["name"]`) or all of them as `name: value` lines. */
  | "headers"
  /** The event's tags: `tags["key"]`. */
  | "tag";

export type FilterFieldSpec = {
  readonly name: string;
  readonly kind: FieldKind;
  /** What it is, in a few words (autocomplete and the docs). */
  readonly about: string;
  /** A clause a user could write with it (the docs, the autocomplete, the tests). */
  readonly example: string;
  /** enum: the values, lower case. */
  readonly values?: readonly string[];
  /** number, size, duration: the value the event holds when it does not apply; no comparison matches it. */
  readonly absent?: number;
  /** text: held in upper case, so == and != compare the value in upper case too. */
  readonly isUpperCase?: boolean;
  /** text: `matches` looks at most at this many characters (else maxMatchedUrlLength). */
  readonly maxMatchedLength?: number;
  /** enum: a value written with spaces means the one with underscores ("client aborted" is "client_aborted"). */
  readonly isSpacedAsUnderscores?: boolean;
};

const textOps: readonly FilterOp[] = ["==", "!=", "startsWith", "endsWith", "contains", "icontains", "matches"];
const orderOps: readonly FilterOp[] = ["==", "!=", "<", ">", "<=", ">="];
const keyedOps: readonly FilterOp[] = ["==", "!=", "startsWith", "endsWith", "contains", "icontains", "matches", "exists"];

/** The operators of each kind of field (keyed fields with their name in brackets; headers without it: all of them). */
export function operatorsOf(spec: FilterFieldSpec, isKeyed: boolean): readonly FilterOp[] {
  switch (spec.kind) {
    case "text":
      return textOps;
    case "method":
    case "enum":
    case "flag":
      return ["==", "!="];
    case "status":
    case "number":
    case "size":
    case "duration":
      return orderOps;
    case "body":
      return ["contains", "icontains", "matches", "==", "!="];
    case "headers":
      return isKeyed ? keyedOps : ["contains", "icontains", "matches"];
    case "tag":
      return keyedOps;
  }
}

/** Whether a field takes a name or key in brackets: required for tags, optional for headers. */
export function keyOf(spec: FilterFieldSpec): "required" | "optional" | "none" {
  return spec.kind === "tag" ? "required" : spec.kind === "headers" ? "optional" : "none";
}

const text = (name: string, about: string, example: string): FilterFieldSpec => ({ name, kind: "text", about, example });
const duration = (name: string, about: string, absent?: number): FilterFieldSpec => ({
  name,
  kind: "duration",
  about,
  example: `${name} > 100ms`,
  ...(absent === undefined ? {} : { absent }),
});

/** Every field, in the order the docs and the autocomplete list them. */
export const filterFieldList: readonly FilterFieldSpec[] = [
  { name: "request.method", kind: "method", about: "the HTTP method", example: 'request.method == "POST"' },
  { name: "request.url", kind: "text", about: "path and query, as on the request line", example: 'request.url contains "/api/"' },
  { name: "response.status", kind: "status", about: "the status code (0: no response)", example: "response.status >= 500" },
  {
    name: "response.unanswered",
    kind: "enum",
    values: [...unansweredReasons, ""],
    isSpacedAsUnderscores: true,
    about: 'why a request got no response: the client gave up, the server closed, or a reset ("" when answered)',
    example: 'response.unanswered != ""',
  },
  duration("duration", "from the first request byte to the last response byte"),
  { name: "request.body", kind: "body", about: "the request body as text", example: 'request.body contains "zebra-7781"' },
  { name: "response.body", kind: "body", about: "the response body as text", example: 'response.body icontains "quota exceeded"' },
  {
    name: "request.headers",
    kind: "headers",
    about: 'one request header (request.headers["name"]) or all of them',
    example: 'request.headers["x-request-id"] == "rid-5521"',
  },
  {
    name: "response.headers",
    kind: "headers",
    about: 'one response header (response.headers["name"]) or all of them',
    example: 'response.headers["content-type"] startsWith "application/json"',
  },
  text("service", "the service that captured it (--service, else the program)", 'service == "checkout"'),
  text("request.host", "the Host header (HTTP/2 :authority)", 'request.host endsWith ".example.com"'),
  text(
    "request.route",
    "the path with its values as placeholders, or the namespace's route pattern it matches",
    'request.route == "/users/{id}"',
  ),
  { name: "tls", kind: "enum", values: tlsStates, about: "whether the TLS connection was decrypted", example: 'tls == "not decrypted"' },
  text("tls.reason", "why a TLS connection was not decrypted", 'tls.reason contains "certificate"'),
  text("tls.server_name", "the server name (SNI) of a TLS connection", 'tls.server_name endsWith ".stripe.com"'),
  {
    name: "protocol",
    kind: "enum",
    values: eventKinds,
    about: "http, or tcp for a connection that was not HTTP",
    example: 'protocol == "tcp"',
  },
  {
    name: "direction",
    kind: "enum",
    values: ["inbound", "outbound"],
    about: "inbound (served) or outbound (a call the program made)",
    example: 'direction == "outbound"',
  },
  text("http.version", '"1.0", "1.1" or "2"', 'http.version == "2"'),
  text("client.address", "the client's ip:port", 'client.address startsWith "10.0."'),
  text("server.address", "the server's ip:port", 'server.address endsWith ":443"'),
  text("request.content_type", "the request's Content-Type", 'request.content_type contains "json"'),
  text("response.content_type", "the response's Content-Type", 'response.content_type startsWith "text/html"'),
  text("request.content_encoding", "the request's Content-Encoding", 'request.content_encoding == "gzip"'),
  text("response.content_encoding", "the response's Content-Encoding", 'response.content_encoding == "br"'),
  text("request.transfer_encoding", "the request's Transfer-Encoding", 'request.transfer_encoding == "chunked"'),
  text("response.transfer_encoding", "the response's Transfer-Encoding", 'response.transfer_encoding == "chunked"'),
  {
    name: "request.content_length",
    kind: "size",
    absent: -1,
    about: "the request's Content-Length, when sent",
    example: "request.content_length > 1MB",
  },
  {
    name: "response.content_length",
    kind: "size",
    absent: -1,
    about: "the response's Content-Length, when sent",
    example: "response.content_length > 100KB",
  },
  { name: "request.body_size", kind: "size", about: "request body bytes on the wire", example: "request.body_size > 64KiB" },
  { name: "response.body_size", kind: "size", about: "response body bytes on the wire", example: "response.body_size > 1MiB" },
  {
    name: "request.body_truncated",
    kind: "flag",
    about: "the request body was cut at capture (searched as far as it was kept)",
    example: "request.body_truncated == true",
  },
  {
    name: "response.body_truncated",
    kind: "flag",
    about: "the response body was cut at capture (searched as far as it was kept)",
    example: "response.body_truncated == true",
  },
  text("request.x_forwarded_for", "the X-Forwarded-For header", 'request.x_forwarded_for contains "203.0.113."'),
  duration("timing.connect", "connecting (outbound, first call on a connection)", -1),
  duration("timing.tls", "the upstream TLS handshake", -1),
  duration("timing.send", "sending (outbound) or receiving (inbound) the request", -1),
  duration("timing.wait", "until the first response byte", -1),
  duration("timing.receive", "receiving (outbound) or sending (inbound) the response", -1),
  { name: "bytes_sent", kind: "size", about: "bytes from the client, any connection", example: "bytes_sent > 1MB" },
  { name: "bytes_received", kind: "size", about: "bytes from the server, any connection", example: "bytes_received > 1MB" },
  text("hostname", "the machine the program ran on", 'hostname == "web-1"'),
  text("process.name", "the program's executable", 'process.name == "node"'),
  text("process.command_line", "the program's command line (redacted)", 'process.command_line contains "--port"'),
  text("process.user", "the user the program ran as", 'process.user == "app"'),
  { name: "process.pid", kind: "number", about: "the program's process id", example: "process.pid == 4242" },
  { name: "process.size", kind: "size", about: "the executable's size", example: "process.size > 50MB" },
  text("kubernetes.namespace", "the pod's Kubernetes namespace", 'kubernetes.namespace == "default"'),
  text("gcp.project", "the Google Cloud project", 'gcp.project == "shop-prod"'),
  text("gke.cluster_name", "the GKE cluster", 'gke.cluster_name == "prod"'),
  text("gke.cluster_location", "the GKE cluster's location", 'gke.cluster_location == "europe-west1"'),
  text("gke.node_name", "the GKE node", 'gke.node_name startsWith "gke-prod-"'),
  text("id", "the event's id", 'id == "3f2b…"'),
  text("parent_id", "the inbound request an outbound call was made for", 'parent_id == "3f2b…"'),
  text("replay_of", 'the request this one sent again with Resend ("" for captured requests)', 'replay_of != ""'),
  { name: "tags", kind: "tag", about: 'one tag of the event: tags["key"]', example: 'tags["grpc_status"] == "14"' },
  {
    name: "db.system",
    kind: "enum",
    values: [...dbSystems, ""],
    about: 'a database call\'s protocol ("" for HTTP and tcp events)',
    example: 'db.system == "postgresql"',
  },
  text("db.statement", "the SQL statement or Redis command, as sent (redacted)", 'db.statement contains "FROM orders"'),
  {
    name: "db.operation",
    kind: "text",
    isUpperCase: true,
    about: "the statement's verb or the Redis command (SELECT, INSERT, GET…), any case",
    example: 'db.operation == "select"',
  },
  text(
    "db.error",
    'the error code of a failed call (SQLSTATE, MySQL error number, Redis error prefix; "" when none)',
    'db.error == "23505"',
  ),
  text("db.error_message", "the error message of a failed call", 'db.error_message contains "deadlock"'),
  {
    name: "ws.message",
    kind: "text",
    maxMatchedLength: 64 * 1024,
    about: "a WebSocket text message's text, or a close's reason (redacted)",
    example: 'ws.message contains "order"',
  },
  {
    name: "ws.direction",
    kind: "enum",
    values: [...wsDirections, ""],
    about: 'who sent a WebSocket message ("" for events that are not one)',
    example: 'ws.direction == "server"',
  },
  {
    name: "ws.opcode",
    kind: "enum",
    values: [...wsOpcodes, ""],
    about: 'a WebSocket message\'s type ("" for events that are not one)',
    example: 'ws.opcode == "close"',
  },
];

export const filterFields: ReadonlyMap<string, FilterFieldSpec> = new Map(filterFieldList.map((f) => [f.name, f]));

/** A needle of a body, header or tag search: JavaScript's `includes` is quadratic in the worst case. */
export const maxNeedleLength = 1024;

/** The most characters of a body `matches` looks at (live and stored alike): a pattern's cost is per character. */
export const maxMatchedBodyLength = 65_536;

/** Header names as HTTP allows them (RFC 9110 tokens), with HTTP/2's pseudo-headers and our `trailer:` prefix. */
export const headerNamePattern = /^(?:trailer:)?:?[!#$%&'*+\-.^_`|~0-9a-z]{1,256}$/;

/** Tag keys as the agent writes them. */
export const tagKeyPattern = /^[A-Za-z0-9_.-]{1,64}$/;

/** Bytes per unit of a size; a bare number is bytes. */
export const sizeUnits: Readonly<Record<string, number>> = {
  b: 1,
  kb: 1000,
  kib: 1024,
  mb: 1000 ** 2,
  mib: 1024 ** 2,
  gb: 1000 ** 3,
  gib: 1024 ** 3,
};

/** Microseconds per unit of a duration; a bare number is milliseconds. */
export const durationUnits: Readonly<Record<string, number>> = { us: 1, µs: 1, ms: 1000, s: 1_000_000 };
