import { useEffect, useState } from "react";
import { api, isAbortError } from "~/ui/lib/api.ts";
import { SetupCommands } from "./setup-commands.tsx";
import { runCommand, type Stack, stacks } from "./stacks.ts";

export const PUBLISHER_POLL_MS = 1000;

/** Polls HasSeenPublisher every second until it says yes; then stops. */
export function usePublisherSeen(orgId: string, isActive = true): boolean {
  const [isSeen, setSeen] = useState(false);
  useEffect(() => {
    if (!isActive || isSeen) return;
    const controller = new AbortController();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const poll = async () => {
      try {
        const answer = await api("HasSeenPublisher", { orgId }, { signal: controller.signal });
        if (answer.hasSeenPublisher) {
          setSeen(true);
          return;
        }
      } catch (err) {
        if (isAbortError(err)) return;
      }
      if (!controller.signal.aborted) timer = setTimeout(poll, PUBLISHER_POLL_MS);
    };
    void poll();
    return () => {
      controller.abort();
      clearTimeout(timer);
    };
  }, [orgId, isActive, isSeen]);
  return isSeen;
}

/**
 * Onboarding of the Live screen: step 1 picks a stack, step 2 shows the commands with the namespace's setup token
 * (made once, not at every opening: setup-token.ts), and waits for the first publisher. Finish needs a connection;
 * "I'll do this later" closes it while not connected. `onConnected` is told when the first program connects.
 */
export function OnboardingOverlay({
  orgId,
  namespaceId,
  publicUrl,
  tokensHref,
  onClose,
  onConnected,
}: {
  orgId: string;
  namespaceId: string;
  publicUrl: string;
  tokensHref?: string;
  onClose: () => void;
  onConnected?: () => void;
}) {
  const [stack, setStack] = useState<Stack | null>(null);
  const isConnected = usePublisherSeen(orgId);
  useEffect(() => {
    if (isConnected) onConnected?.();
  }, [isConnected, onConnected]);

  return (
    <div className="absolute inset-0 z-30 flex items-center justify-center bg-zinc-950/80 p-4 backdrop-blur-sm">
      <div
        role="dialog"
        aria-modal="true"
        aria-labelledby="onboarding-title"
        className="w-full max-w-xl rounded-xl border border-zinc-800 bg-zinc-900 p-6 shadow-2xl"
      >
        {stack === null ? (
          <>
            <h2 id="onboarding-title" className="text-lg font-semibold text-zinc-100">
              Connect your backend
            </h2>
            <p className="mt-1 text-sm text-zinc-400">What does your server run on?</p>
            <div className="mt-4 grid grid-cols-2 gap-2 sm:grid-cols-5">
              {stacks.map((s) => (
                <button
                  key={s.id}
                  type="button"
                  onClick={() => setStack(s.id)}
                  className="rounded-lg border border-zinc-700 bg-zinc-800 px-3 py-3 text-sm font-medium text-zinc-100 hover:border-zinc-500 hover:bg-zinc-700"
                >
                  {s.label}
                </button>
              ))}
            </div>
            <div className="mt-5 flex justify-end">
              <button type="button" onClick={onClose} className="text-sm text-zinc-400 hover:text-zinc-100">
                I'll do this later
              </button>
            </div>
          </>
        ) : (
          <>
            <h2 id="onboarding-title" className="text-lg font-semibold text-zinc-100">
              Run your app with Tapscope
            </h2>
            <div role="tablist" aria-label="Stack" className="mt-3 flex flex-wrap gap-1">
              {stacks.map((s) => (
                <button
                  key={s.id}
                  type="button"
                  role="tab"
                  aria-selected={s.id === stack}
                  onClick={() => setStack(s.id)}
                  className={`rounded-md px-2.5 py-1 text-xs font-medium ${s.id === stack ? "bg-zinc-100 text-zinc-900" : "text-zinc-300 hover:bg-zinc-800"}`}
                >
                  {s.label}
                </button>
              ))}
            </div>
            <div className="mt-4">
              <SetupCommands namespaceId={namespaceId} publicUrl={publicUrl} run={runCommand(stack)} tokensHref={tokensHref} />
            </div>
            <div className="mt-5 flex items-center justify-between">
              <p role="status" className={`flex items-center gap-2 text-sm ${isConnected ? "text-emerald-400" : "text-zinc-400"}`}>
                <span className={`size-2 rounded-full ${isConnected ? "bg-emerald-400" : "animate-pulse bg-amber-400"}`} />
                {isConnected ? "Connected!" : "Waiting for connections…"}
              </p>
              <div className="flex items-center gap-3">
                {!isConnected ? (
                  <button type="button" onClick={onClose} className="text-sm text-zinc-400 hover:text-zinc-100">
                    I'll do this later
                  </button>
                ) : null}
                <button
                  type="button"
                  disabled={!isConnected}
                  onClick={onClose}
                  className="rounded-md bg-zinc-100 px-3 py-1.5 text-sm font-medium text-zinc-900 hover:bg-white disabled:cursor-not-allowed disabled:opacity-40"
                >
                  Finish
                </button>
              </div>
            </div>
          </>
        )}
      </div>
    </div>
  );
}
