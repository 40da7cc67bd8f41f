/** The shared link's expiry, read from the 'expiry' parameter of the link URL. */
export function parseLinkExpiry(linkUrl: string): Date {
  let expiry: string | null;
  try {
    expiry = new URL(linkUrl).searchParams.get("expiry");
  } catch {
    expiry = null;
  }
  if (expiry === null) throw new Error(`Couldn't find "expiry" param in URL`);
  // Seconds or milliseconds since the epoch, or an ISO date.
  const date = /^\d+$/.test(expiry) ? new Date(expiry.length > 11 ? Number(expiry) : Number(expiry) * 1000) : new Date(expiry);
  if (Number.isNaN(date.getTime())) throw new Error("Invalid date");
  return date;
}

/**
 * Time left: more than a day shows days and hours; else hours and minutes;
 * else minutes and seconds; else seconds.
 */
export function formatCountdown(msLeft: number): string {
  const total = Math.max(0, Math.floor(msLeft / 1000));
  const days = Math.floor(total / 86_400);
  const hours = Math.floor((total % 86_400) / 3600);
  const minutes = Math.floor((total % 3600) / 60);
  const seconds = total % 60;
  if (total > 86_400) return `${days}d ${hours}h`;
  if (total >= 3600) return `${Math.floor(total / 3600)}h ${minutes}m`;
  if (total >= 60) return `${minutes}m ${seconds}s`;
  return `${seconds}s`;
}
