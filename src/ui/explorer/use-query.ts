import { useEffect, useState } from "react";
import { errorMessage } from "~/lib/errors.ts";
import { isAbortError } from "~/ui/lib/api.ts";
import { QueryFailure } from "./query-client.ts";

export type QueryState<T> =
  | { status: "loading"; data: T | null }
  | { status: "done"; data: T }
  | { status: "failed"; data: T | null; message: string; details: string | null };

/**
 * Runs `run` whenever `key` changes (the previous run is aborted) or retry() is called. The last data stays
 * while the next loads, so the view never blanks; a failure keeps it too and carries the message.
 */
export function useQuery<T>(
  key: string | null,
  run: (signal: AbortSignal, partial: (data: T) => void) => Promise<T>,
): QueryState<T> & { retry: () => void } {
  const [state, setState] = useState<QueryState<T>>({
    status: "loading",
    data: null,
  });
  const [attempt, setAttempt] = useState(0);
  // biome-ignore lint/correctness/useExhaustiveDependencies: key stands for run's inputs; attempt re-runs
  useEffect(() => {
    if (key === null) return;
    const controller = new AbortController();
    setState((s) => ({ status: "loading", data: s.data }));
    const partial = (data: T) => {
      if (!controller.signal.aborted) setState({ status: "loading", data });
    };
    run(controller.signal, partial).then(
      (data) => {
        if (!controller.signal.aborted) setState({ status: "done", data });
      },
      (err: unknown) => {
        if (controller.signal.aborted || isAbortError(err)) return;
        setState((s) => ({
          status: "failed",
          data: s.data,
          message: errorMessage(err) || "The query failed.",
          details: err instanceof QueryFailure ? err.details : null,
        }));
      },
    );
    return () => controller.abort();
  }, [key, attempt]);
  return { ...state, retry: () => setAttempt((n) => n + 1) };
}
