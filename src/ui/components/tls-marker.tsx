import { isDecrypted } from "~/lib/event-url.ts";
import type { TracedEvent } from "~/lib/protocol/event.ts";

type TlsFields = Partial<Pick<TracedEvent, "tags">>;

export function LockIcon({ className = "size-3" }: { className?: string }) {
  return (
    <svg className={className} viewBox="0 0 20 20" fill="currentColor" aria-hidden="true" data-icon="lock">
      <path
        fillRule="evenodd"
        d="M10 2a4 4 0 0 0-4 4v2H5a1 1 0 0 0-1 1v8a1 1 0 0 0 1 1h10a1 1 0 0 0 1-1V9a1 1 0 0 0-1-1h-1V6a4 4 0 0 0-4-4zm2 6V6a2 2 0 1 0-4 0v2h4z"
        clipRule="evenodd"
      />
    </svg>
  );
}

/**
 * The TLS state of a list row: a lock for an exchange read from a decrypted connection, "not decrypted" (its
 * reason on hover) for a TLS connection passed through; nothing for plaintext.
 */
export function TlsMarker({ event }: { event: TlsFields }) {
  if (isDecrypted(event)) {
    return (
      <span
        role="img"
        aria-label="TLS, decrypted"
        title="TLS, decrypted"
        className="mr-1 inline-flex shrink-0 align-[-1px] text-emerald-400"
      >
        <LockIcon />
      </span>
    );
  }
  if (event.tags?.tls !== "not decrypted") return null;
  const reason = event.tags.tls_reason;
  return (
    <span
      title={reason ? `TLS not decrypted: ${reason}` : "TLS not decrypted"}
      className="mr-1 shrink-0 rounded bg-amber-500/15 px-1 text-[10px] text-amber-300"
    >
      not decrypted
    </span>
  );
}
