/** The browser's local keys. Storage can be unavailable (private modes, quotas). */
export const storageKeys = {
  lastNamespaceId: "tapscope:lastNamespaceId",
  navHidden: "tapscope:navHidden",
  /** The display zone of every time shown: "UTC" or "Local" (ui/lib/time-zone.ts). */
  timeZone: "tapscope:timeZone",
} as const;

export function readLocal(key: string): string | null {
  try {
    return window.localStorage.getItem(key);
  } catch {
    return null;
  }
}

export function writeLocal(key: string, value: string): void {
  try {
    window.localStorage.setItem(key, value);
  } catch {
    // not fatal: the choice just is not remembered
  }
}
