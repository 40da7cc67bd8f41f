import type { ReactNode } from "react";
import type { ErrorText } from "~/ui/lib/api.ts";

/** A failure shown in place: the human message (after an optional lead), then the details line in small print. */
export function ErrorNotice({
  error,
  lead,
  className = "",
  children,
}: {
  error: ErrorText;
  lead?: string;
  className?: string;
  children?: ReactNode;
}) {
  return (
    <div role="alert" className={`rounded-lg border border-red-500/30 bg-red-500/10 p-4 text-sm text-red-300 ${className}`}>
      <p>
        {lead ? `${lead} ` : null}
        {error.message}
        {children}
      </p>
      {error.details ? (
        <p data-testid="error-details" className="mt-1.5 font-mono text-[11px] text-red-300/60">
          {error.details}
        </p>
      ) : null}
    </div>
  );
}
