/** Tailwind text colour for a status code; 0 means no response was seen. */
export function statusClass(status: number): string {
  if (status === 0) return "text-zinc-500";
  if (status >= 500) return "text-red-400";
  if (status >= 400) return "text-amber-400";
  if (status >= 300) return "text-sky-400";
  return "text-emerald-400";
}
