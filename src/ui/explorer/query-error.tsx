/** A failed query: what failed, why, and a retry (never a blank panel); the status and trace id in small print. */
export function QueryError({
  what,
  message,
  details = null,
  onRetry,
}: {
  what: string;
  message: string;
  details?: string | null;
  onRetry: () => void;
}) {
  return (
    <div role="alert" className="m-3 rounded-lg border border-red-500/30 bg-red-500/10 p-3 text-sm text-red-300">
      {what} could not be loaded: {message}
      <button
        type="button"
        onClick={onRetry}
        className="ml-3 rounded-md border border-red-400/40 px-2 py-0.5 text-red-200 hover:bg-red-500/20"
      >
        Retry
      </button>
      {details ? (
        <p data-testid="error-details" className="mt-1.5 font-mono text-[11px] text-red-300/60">
          {details}
        </p>
      ) : null}
    </div>
  );
}
