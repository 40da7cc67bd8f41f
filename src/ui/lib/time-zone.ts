import { useCallback, useSyncExternalStore } from "react";
import type { TimeZoneMode } from "~/lib/time/ticks.ts";
import { readLocal, storageKeys, writeLocal } from "./storage.ts";

/**
 * The one display zone (UTC or Local) of every screen that shows a time: Live, the shared-link viewer, Requests, the
 * request detail, the focus label. Kept in the browser's storage, so the live frame (a same-origin iframe) and its
 * page follow one choice: a change in either reaches the other through the storage event.
 */
export const DEFAULT_TIME_ZONE: TimeZoneMode = "UTC";

const listeners = new Set<() => void>();

function read(): TimeZoneMode {
  return readLocal(storageKeys.timeZone) === "Local" ? "Local" : DEFAULT_TIME_ZONE;
}

function subscribe(onChange: () => void): () => void {
  listeners.add(onChange);
  const onStorage = (event: StorageEvent) => {
    if (event.key === null || event.key === storageKeys.timeZone) onChange();
  };
  window.addEventListener("storage", onStorage);
  return () => {
    listeners.delete(onChange);
    window.removeEventListener("storage", onStorage);
  };
}

export function setTimeZone(zone: TimeZoneMode): void {
  writeLocal(storageKeys.timeZone, zone);
  for (const listener of listeners) listener();
}

/** The display zone and its setter; the server (and hydration) render the default. */
export function useTimeZone(): [TimeZoneMode, (zone: TimeZoneMode) => void] {
  const zone = useSyncExternalStore(subscribe, read, () => DEFAULT_TIME_ZONE);
  return [zone, useCallback((next: TimeZoneMode) => setTimeZone(next), [])];
}
