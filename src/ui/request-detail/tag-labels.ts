/**
 * The detail's names for the tags an event carries (src/agent/event.ts): words, not keys. A tag without a name here
 * reads as its key with spaces ("db_system" as "db system").
 */
const tagLabels: Record<string, string> = {
  http_resp_version: "response HTTP version",
  interim_statuses: "interim responses",
  incomplete: "incomplete because",
  tunnel: "proxy tunnel",
  proxy: "through the proxy",
  ambiguous_framing: "ambiguous framing",
  upgrade: "upgraded to",
  grpc_status: "gRPC status",
  grpc_message: "gRPC message",
  req_grpc: "gRPC request",
  resp_grpc: "gRPC response",
  req_headers_dropped: "request headers left out",
  resp_headers_dropped: "response headers left out",
};

export function tagLabel(key: string): string {
  return tagLabels[key] ?? key.replaceAll("_", " ");
}

/** A tag's value as shown: the response's HTTP version reads "HTTP/1.0". */
export function tagValue(key: string, value: string): string {
  return key === "http_resp_version" ? `HTTP/${value}` : value;
}
