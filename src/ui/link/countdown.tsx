import { useEffect, useState } from "react";
import { formatCountdown } from "./link-expiry.ts";

export const EXPIRED_TOOLTIP = "This link has expired, and will not work if the page is refreshed.";

/** Time left until `expiry`, ticking every second; at zero a warning icon with the expired tooltip. */
export function Countdown({ expiry, onExpire }: { expiry: Date; onExpire?: () => void }) {
  const [now, setNow] = useState(() => Date.now());
  const msLeft = expiry.getTime() - now;
  const isExpired = msLeft <= 0;
  useEffect(() => {
    if (isExpired) {
      onExpire?.();
      return;
    }
    const timer = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(timer);
  }, [isExpired, onExpire]);

  if (isExpired) {
    return (
      <span className="flex items-center gap-1.5 text-sm text-amber-400" title={EXPIRED_TOOLTIP} data-testid="countdown-expired">
        <svg className="size-4" viewBox="0 0 20 20" fill="currentColor" aria-label={EXPIRED_TOOLTIP} role="img">
          <path
            fillRule="evenodd"
            d="M8.5 2.9a1.7 1.7 0 0 1 3 0l6.3 11.4A1.7 1.7 0 0 1 16.3 17H3.7a1.7 1.7 0 0 1-1.5-2.7L8.5 2.9zM10 7a1 1 0 0 0-1 1v3a1 1 0 1 0 2 0V8a1 1 0 0 0-1-1zm0 8a1 1 0 1 0 0-2 1 1 0 0 0 0 2z"
            clipRule="evenodd"
          />
        </svg>
        Expired
      </span>
    );
  }
  return (
    <span className="text-sm text-zinc-400" data-testid="countdown">
      Expires in <span className="font-mono text-zinc-200 tabular-nums">{formatCountdown(msLeft)}</span>
    </span>
  );
}
