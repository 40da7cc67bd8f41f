/** A failed query: what failed, why, and a retry (never a blank panel). */
export function QueryError({ what, message, onRetry }: { what: string; message: string; onRetry: () => void }) {
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
    </div>
  );
}
