import { useTimeZone } from "~/ui/lib/time-zone.ts";

/** The display zone's switch (UTC or Local), the same on every screen that shows times. */
export function ZoneToggle({ className = "" }: { className?: string }) {
  const [zone, setZone] = useTimeZone();
  return (
    <fieldset aria-label="Time zone" className={`flex shrink-0 overflow-hidden rounded-md border border-zinc-700 text-xs ${className}`}>
      {(["UTC", "Local"] as const).map((z) => (
        <button
          key={z}
          type="button"
          aria-pressed={zone === z}
          title={z === "UTC" ? "Show times in UTC" : "Show times in this browser's time zone"}
          onClick={() => setZone(z)}
          className={`px-2 py-1 leading-none ${zone === z ? "bg-zinc-700 text-zinc-50" : "bg-zinc-900 text-zinc-400 hover:bg-zinc-800"}`}
        >
          {z}
        </button>
      ))}
    </fieldset>
  );
}
