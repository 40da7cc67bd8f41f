import { AppError } from "~/lib/errors.ts";
import type { TracedEvent } from "~/lib/protocol/event.ts";

const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function isNamespaceId(value: unknown): value is string {
  return typeof value === "string" && uuidPattern.test(value);
}

/**
 * The one way a table name is made: from a validated namespace UUID, dashes removed (spec section 3).
 * Anything else is refused before it can reach SQL.
 */
export function tableName(namespaceId: string): string {
  if (!isNamespaceId(namespaceId)) throw new AppError("BAD_REQUEST", "invalid namespace id");
  return `events_${namespaceId.replaceAll("-", "").toLowerCase()}`;
}

const tablePattern = /^events_([0-9a-f]{32})$/;

/** The namespace id a table belongs to, or null for tables that are not ours. */
export function namespaceIdOfTable(name: string): string | null {
  const m = tablePattern.exec(name);
  if (!m?.[1]) return null;
  const h = m[1];
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

/** int: whole numbers (Int64 in storage); flag: booleans stored as 0/1; json: arrays/maps as JSON text. */
export type ColumnKind = "int" | "flag" | "string" | "json";

/** Storage layout shared by both engines, in table order. Every TracedEvent field is one column. */
export const eventColumns = [
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
] as const satisfies ReadonlyArray<readonly [keyof TracedEvent, ColumnKind]>;

export type EventColumn = (typeof eventColumns)[number][0];

export const columnKind: Record<string, ColumnKind> = Object.fromEntries(eventColumns);

/** A stored value back to its TracedEvent shape (engines hand back bigints, 0/1, JSON text). */
export function fromStored(kind: ColumnKind, value: unknown): unknown {
  switch (kind) {
    case "int":
      return value === null || value === undefined ? 0 : Number(value);
    case "flag":
      return value === true || value === 1 || value === "1" || value === 1n;
    case "json":
      try {
        return JSON.parse(String(value ?? "null")) ?? undefined;
      } catch {
        return undefined;
      }
    default:
      return value === null || value === undefined ? "" : String(value);
  }
}

export function rowToEvent(row: Record<string, unknown>): TracedEvent {
  const out: Record<string, unknown> = {};
  for (const [name, kind] of eventColumns) out[name] = fromStored(kind, row[name]);
  if (!Array.isArray(out.http_req_headers)) out.http_req_headers = [];
  if (!Array.isArray(out.http_resp_headers)) out.http_resp_headers = [];
  if (typeof out.tags !== "object" || out.tags === null || Array.isArray(out.tags)) out.tags = {};
  return out as TracedEvent;
}
