import { formatClock, pad } from "~/lib/format.ts";

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
