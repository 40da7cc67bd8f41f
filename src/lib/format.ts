/** Microseconds as a short human duration: 840µs, 1.0ms, 12.4ms, 250ms, 2.35s, 2m 05s; "—" for no duration. */
export function formatDuration(us: number): string {
  if (!Number.isFinite(us) || us < 0) return "—";
  if (us < 999.5) return `${Math.round(us)}µs`;
  const ms = us / 1000;
  if (ms < 99.95) return `${ms.toFixed(1)}ms`;
  if (ms < 999.5) return `${ms.toFixed(0)}ms`;
  const s = ms / 1000;
  if (s < 59.995) return `${s.toFixed(2)}s`;
  const whole = Math.round(s);
  return `${Math.floor(whole / 60)}m ${pad(whole % 60)}s`;
}

/** Bytes in steps of 1024: 512 B, 1.0 KB, 5.0 MB, 1.25 GB; "—" for no size. */
export function formatBytes(bytes: number): string {
  if (!Number.isFinite(bytes) || bytes < 0) return "—";
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KB`;
  if (bytes < 1024 ** 3) return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
  return `${(bytes / 1024 ** 3).toFixed(2)} GB`;
}

/** Event time (µs since the epoch) as local HH:MM:SS.mmm. */
export function formatClock(timeUs: number): string {
  const d = new Date(Math.floor(timeUs / 1000));
  return `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}.${pad(d.getMilliseconds(), 3)}`;
}

export function pad(n: number, width = 2): string {
  return String(n).padStart(width, "0");
}
