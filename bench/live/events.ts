import { neutralEvent, type TracedEvent } from "~/lib/protocol/event.ts";

const methods = ["GET", "GET", "GET", "POST", "PUT", "DELETE"];
const statuses = [200, 200, 200, 201, 204, 301, 404, 429, 500, 503];
const paths = (i: number) =>
  i % 4 === 0
    ? `/api/users/${i % 997}`
    : i % 4 === 1
      ? `/api/orders/${i % 389}?expand=items`
      : i % 4 === 2
        ? `/static/app.${i % 7}.js`
        : `/healthz`;

/**
 * The benchmark's synthetic traffic, a pure function of the index, so the subscriber side can work out which
 * events each filter should have let through (and so count losses). `time` carries the publish instant (µs).
 */
export function benchEvent(i: number, publishedAtUs: number): TracedEvent {
  const method = methods[i % methods.length]!;
  return {
    ...neutralEvent(),
    time: publishedAtUs,
    event_id: `00000000-0000-4000-8000-${String(i).padStart(12, "0")}`,
    parent_event_id: "",
    service: "bench",
    hostname: "bench-host",
    gcp_project: "",
    kubernetes_namespace: "",
    gke_cluster_location: "",
    gke_cluster_name: "",
    gke_node_name: "",
    process_id: 1234,
    process_executable_name: "node",
    process_executable_size: 90_000_000,
    process_command_line: "node server.js",
    process_user: "app",
    protocol: "http",
    tls_server_name: "",
    http_version: "1.1",
    http_is_outgoing: i % 5 === 0,
    http_client_addr: "10.0.0.7:51234",
    http_server_addr: "10.0.0.2:8080",
    http_duration: ((i * 7919) % 600) * 1000 + 150,
    http_req_method: method,
    http_req_path: paths(i),
    http_req_body_size_bytes_wire: method === "GET" ? 0 : 64,
    http_req_transfer_encoding: "",
    http_req_content_type: method === "GET" ? "" : "application/json",
    http_req_content_encoding: "",
    http_req_content_length: method === "GET" ? -1 : 64,
    http_req_host: "api.example.com",
    http_req_x_forwarded_for: "",
    http_req_headers: [
      ["Host", "api.example.com"],
      ["User-Agent", "bench/1.0"],
      ["Accept", "application/json"],
    ],
    http_req_body: method === "GET" ? "" : "eyJuYW1lIjoiYWxpY2UiLCJlbWFpbCI6ImFsaWNlQGV4YW1wbGUuY29tIiwicm9sZSI6ImFkbWluIn0=",
    http_req_body_truncated: false,
    http_resp_status_code: statuses[i % statuses.length]!,
    http_resp_body_size_bytes_wire: 180,
    http_resp_transfer_encoding: "",
    http_resp_content_type: "application/json",
    http_resp_content_encoding: "",
    http_resp_content_length: 180,
    http_resp_headers: [
      ["Content-Type", "application/json"],
      ["Content-Length", "180"],
    ],
    http_resp_body: "eyJpZCI6NDIsIm5hbWUiOiJhbGljZSIsImVtYWlsIjoiYWxpY2VAZXhhbXBsZS5jb20iLCJjcmVhdGVkIjoiMjAyNi0wMS0wMVQwMDowMDowMFoifQ==",
    http_resp_body_truncated: false,
    timing_connect: -1,
    timing_tls: -1,
    timing_send: 40,
    timing_wait: 900,
    timing_receive: 60,
    bytes_sent: 400,
    bytes_received: 380,
    tags: { env: "bench" },
  };
}

/** The filters the 50 subscribers use, cycled: a spread of the language, a few with no filter at all. */
export const benchFilters: string[][] = [
  [],
  ['request.method == "GET"'],
  ["response.status >= 500"],
  ['request.url startsWith "/api/"'],
  ['request.url matches "^/api/users/[0-9]+$"'],
  ["duration > 300ms"],
  ['request.method == "POST" || request.method == "PUT"', "response.status < 300"],
  ['request.url contains "orders"', "duration >= 100ms && duration < 400ms"],
  ['(request.url endsWith ".js" || request.url == "/healthz") && response.status == 200'],
  ['request.url matches "(a|b|c)*/orders/[0-9]{1,3}\\\\?expand=.*"'],
];

export function nowUs(): number {
  return Math.round((performance.timeOrigin + performance.now()) * 1000);
}
