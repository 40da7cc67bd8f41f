import { useEffect, useState } from "react";
import { ErrorNotice } from "~/ui/components/error-notice.tsx";
import { api, describeError, type ErrorText, isAbortError } from "~/ui/lib/api.ts";
import { OnboardingOverlay } from "../onboarding/onboarding-overlay.tsx";
import { FilteredLiveFrame, iframerSrc } from "./filtered-live-frame.tsx";

type Join = { status: "joining" } | { status: "joined"; websocketUrl: string } | { status: "failed"; error: ErrorText };

/**
 * The Live screen (/dashboard/{ns}/live): filters plus the live frame fed by JoinSubscriber, and the
 * onboarding overlay while the org has not seen a publisher yet.
 */
export function LiveScreenView({ namespaceId, orgId, commitHash }: { namespaceId: string; orgId: string; commitHash: string }) {
  const [join, setJoin] = useState<Join>({ status: "joining" });
  const [attempt, setAttempt] = useState(0);
  const [isOnboarding, setOnboarding] = useState(false);
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
        <FilteredLiveFrame
          key={join.websocketUrl}
          src={iframerSrc({ commitHash, socketUrl: join.websocketUrl, namespaceId, eventId: context.eventId })}
          suggestionsScope={namespaceId}
        />
      ) : (
        <p className="p-6 text-sm text-zinc-500">Connecting to the live view…</p>
      )}
      {isOnboarding && context ? (
        <OnboardingOverlay orgId={orgId} namespaceId={namespaceId} publicUrl={context.origin} onClose={() => setOnboarding(false)} />
      ) : null}
    </div>
  );
}
