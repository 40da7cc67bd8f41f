import { useEffect, useState } from "react";
import { ErrorNotice } from "~/ui/components/error-notice.tsx";
import { api, describeError, type ErrorText, isAbortError } from "~/ui/lib/api.ts";
import { OnboardingOverlay } from "../onboarding/onboarding-overlay.tsx";
import { SetupCommands } from "../onboarding/setup-commands.tsx";
import { FilteredLiveFrame, iframerSrc } from "./filtered-live-frame.tsx";

type Join = { status: "joining" } | { status: "joined"; websocketUrl: string } | { status: "failed"; error: ErrorText };

/**
 * The Live screen (/dashboard/{ns}/live): filters plus the live frame fed by JoinSubscriber, the onboarding overlay
 * while the org has not seen a publisher yet, and how to connect a program while none is connected and nothing was
 * seen. `onProgramConnected` is told when a program of the namespace is connected.
 */
export function LiveScreenView({
  namespaceId,
  namespaceName,
  orgId,
  commitHash,
  userId,
  onProgramConnected,
}: {
  namespaceId: string;
  namespaceName?: string;
  orgId: string;
  commitHash: string;
  /** The signed-in user: the live list keeps their choice of columns. */
  userId?: string;
  onProgramConnected?: () => void;
}) {
  const [join, setJoin] = useState<Join>({ status: "joining" });
  const [attempt, setAttempt] = useState(0);
  const [isOnboarding, setOnboarding] = useState(false);
  const [frameStats, setFrameStats] = useState<{ numPublishers: number; hasEvents: boolean } | null>(null);
  const isProgramConnected = (frameStats?.numPublishers ?? 0) > 0;
  useEffect(() => {
    if (isProgramConnected) onProgramConnected?.();
  }, [isProgramConnected, onProgramConnected]);
  const tokensHref = namespaceName ? `/dashboard/${encodeURIComponent(namespaceName)}/tokens` : undefined;
  const showConnect = frameStats !== null && frameStats.numPublishers === 0 && !frameStats.hasEvents && !isOnboarding;
  const [context, setContext] = useState<{ origin: string; eventId: string | null } | null>(null);

  useEffect(() => {
    setContext({ origin: window.location.origin, eventId: new URLSearchParams(window.location.search).get("event") });
  }, []);

  // biome-ignore lint/correctness/useExhaustiveDependencies: attempt re-runs the join on Retry
  useEffect(() => {
    const controller = new AbortController();
    setJoin({ status: "joining" });
    api("JoinSubscriber", { namespaceId }, { signal: controller.signal })
      .then((answer) => setJoin({ status: "joined", websocketUrl: answer.websocketUrl }))
      .catch((err) => {
        if (!isAbortError(err)) setJoin({ status: "failed", error: describeError(err) });
      });
    return () => controller.abort();
  }, [namespaceId, attempt]);

  // Onboarding shows while the org has never seen a publisher.
  useEffect(() => {
    const controller = new AbortController();
    api("HasSeenPublisher", { orgId }, { signal: controller.signal })
      .then((answer) => setOnboarding(!answer.hasSeenPublisher))
      .catch(() => {});
    return () => controller.abort();
  }, [orgId]);

  return (
    <div className="relative flex min-h-0 flex-1 flex-col">
      {join.status === "failed" ? (
        <ErrorNotice error={join.error} lead="Could not open the live view:">
          <button
            type="button"
            onClick={() => setAttempt((n) => n + 1)}
            className="ml-3 rounded-md border border-red-400/40 px-2 py-0.5 text-red-200 hover:bg-red-500/20"
          >
            Retry
          </button>
        </ErrorNotice>
      ) : join.status === "joined" && context ? (
        <>
          {showConnect ? (
            <section
              aria-labelledby="connect-title"
              data-testid="connect-program"
              className="mb-3 rounded-lg border border-zinc-800 bg-zinc-900/60 p-4"
            >
              <h2 id="connect-title" className="text-sm font-semibold text-zinc-100">
                No program is connected{namespaceName ? ` to ${namespaceName}` : ""}
              </h2>
              <p className="mt-1 mb-3 text-xs text-zinc-400">
                Install the agent, give it this namespace's token and start your program under it: its requests show up below.
              </p>
              <SetupCommands namespaceId={namespaceId} publicUrl={context.origin} run="<your command>" tokensHref={tokensHref} />
            </section>
          ) : null}
          <FilteredLiveFrame
            key={join.websocketUrl}
            src={iframerSrc({ commitHash, socketUrl: join.websocketUrl, namespaceId, eventId: context.eventId, userKey: userId })}
            suggestionsScope={namespaceId}
            onStats={setFrameStats}
          />
        </>
      ) : (
        <p className="p-6 text-sm text-zinc-500">Connecting to the live view…</p>
      )}
      {isOnboarding && context ? (
        <OnboardingOverlay
          orgId={orgId}
          namespaceId={namespaceId}
          publicUrl={context.origin}
          tokensHref={tokensHref}
          onClose={() => setOnboarding(false)}
          onConnected={onProgramConnected}
        />
      ) : null}
    </div>
  );
}
