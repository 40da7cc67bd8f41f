import type { TracedEvent } from "~/lib/protocol/event.ts";

let seq = 0;

/** A plausible inbound HTTP event; override what a test is about. */
export function makeEvent(overrides: Partial<TracedEvent> = {}): TracedEvent {
  seq++;
  return {
    time: 1_763_700_000_000_000 + seq * 1000,
    event_id: `00000000-0000-4000-8000-${String(seq).padStart(12, "0")}`,
    parent_event_id: "",
    service: "api",
    hostname: "box",
    gcp_project: "",
    kubernetes_namespace: "",
    gke_cluster_location: "",
    gke_cluster_name: "",
    gke_node_name: "",
    process_id: 42,
    process_executable_name: "node",
    process_executable_size: 1,
    process_command_line: "node server.js",
    process_user: "app",
    protocol: "http",
    tls_server_name: "",
    http_version: "1.1",
    http_is_outgoing: false,
    http_client_addr: "127.0.0.1:50000",
    http_server_addr: "127.0.0.1:8080",
    http_duration: 12_345,
    http_req_method: "GET",
    http_req_path: `/items/${seq}`,
    http_req_body_size_bytes_wire: 0,
    http_req_transfer_encoding: "",
    http_req_content_type: "",
    http_req_content_encoding: "",
    http_req_content_length: -1,
    http_req_host: "localhost:8080",
    http_req_x_forwarded_for: "",
    http_req_headers: [
      ["Host", "localhost:8080"],
      ["User-Agent", "test"],
    ],
    http_req_body: "",
    http_req_body_truncated: false,
    http_resp_status_code: 200,
    http_resp_body_size_bytes_wire: 2,
    http_resp_transfer_encoding: "",
    http_resp_content_type: "application/json",
    http_resp_content_encoding: "",
    http_resp_content_length: 2,
    http_resp_headers: [["Content-Type", "application/json"]],
    http_resp_body: btoa("{}"),
    http_resp_body_truncated: false,
    timing_connect: -1,
    timing_send: 100,
    timing_wait: 12_000,
    timing_receive: 245,
    bytes_sent: 100,
    bytes_received: 50,
    tags: {},
    ...overrides,
  };
}

export const b64 = (text: string) => Buffer.from(text, "utf8").toString("base64");
