import type { TracedEvent } from "~/lib/protocol/event.ts";

/** Microseconds as a short human duration: 840µs, 12.4ms, 1.52s, 2m 05s. */
export function formatDuration(us: number): string {
  if (!Number.isFinite(us) || us < 0) return "—";
  if (us < 1000) return `${Math.round(us)}µs`;
  const ms = us / 1000;
  if (ms < 10) return `${ms.toFixed(2)}ms`;
  if (ms < 1000) return `${ms.toFixed(ms < 100 ? 1 : 0)}ms`;
  const s = ms / 1000;
  if (s < 60) return `${s.toFixed(2)}s`;
  const m = Math.floor(s / 60);
  return `${m}m ${String(Math.floor(s % 60)).padStart(2, "0")}s`;
}

export function formatBytes(bytes: number): string {
  if (!Number.isFinite(bytes) || bytes < 0) return "—";
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KB`;
  if (bytes < 1024 ** 3) return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
  return `${(bytes / 1024 ** 3).toFixed(2)} GB`;
}

const pad = (n: number, w = 2) => String(n).padStart(w, "0");

/** Event time (µs since the epoch) as local HH:MM:SS.mmm. */
export function formatClock(timeUs: number): string {
  const d = new Date(Math.floor(timeUs / 1000));
  return `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}.${pad(d.getMilliseconds(), 3)}`;
}

export function formatDateTime(timeUs: number): string {
  const d = new Date(Math.floor(timeUs / 1000));
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${formatClock(timeUs)}`;
}

/** Tailwind text colour for a status code; 0 means no response was seen. */
export function statusClass(status: number): string {
  if (status === 0) return "text-zinc-500";
  if (status >= 500) return "text-red-400";
  if (status >= 400) return "text-amber-400";
  if (status >= 300) return "text-sky-400";
  return "text-emerald-400";
}

/** The URL as a user reads it: full URL for outbound calls, path for requests the program served. */
export function displayUrl(event: TracedEvent): string {
  if (event.protocol === "tcp") return `${event.http_server_addr} (tcp)`;
  if (!event.http_is_outgoing) return event.http_req_path || "/";
  return `${requestOrigin(event)}${event.http_req_path || "/"}`;
}

/** scheme://host of the request, from the Host header (or :authority), else the server address. */
export function requestOrigin(event: TracedEvent): string {
  const scheme = event.tls_server_name ? "https" : "http";
  const host = event.http_req_host || event.tls_server_name || event.http_server_addr || "localhost";
  return `${scheme}://${host}`;
}

export function fullUrl(event: TracedEvent): string {
  return `${requestOrigin(event)}${event.http_req_path || "/"}`;
}
