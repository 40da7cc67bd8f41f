import { useEffect, useState } from "react";
import { ErrorNotice } from "~/ui/components/error-notice.tsx";
import { LogoMark } from "~/ui/components/logo.tsx";
import { Spinner } from "~/ui/components/spinner.tsx";
import { api, describeError, type ErrorText, isAbortError } from "~/ui/lib/api.ts";
import { FilteredLiveFrame, iframerSrc } from "../live/filtered-live-frame.tsx";
import { Countdown } from "./countdown.tsx";
import { parseLinkExpiry } from "./link-expiry.ts";
import { ShareBox } from "./share-box.tsx";
import { usePingLink } from "./use-ping-link.ts";

type LinkState =
  | { status: "loading" }
  | { status: "failed"; error: ErrorText }
  | { status: "ready"; linkUrl: string; expiry: Date; isExpiredOnLoad: boolean };

export const EXPIRED_TITLE = "This link has expired.";
export const EXPIRED_HINT = "Run the wrapper command again to get a new one.";
export const UNKNOWN_LINK = "This link does not exist. Check the address, or run the wrapper command again to get a new one.";

/**
 * The shared-link viewer (/link/{id}): GetLink gives the link's socket URL and expiry; an already expired
 * link shows the expired panel, otherwise the countdown, a presence ping and the sandboxed live frame.
 */
export function LinkViewer({ linkId, commitHash }: { linkId: string; commitHash: string }) {
  const [state, setState] = useState<LinkState>({ status: "loading" });
  const [origin, setOrigin] = useState<string | null>(null);
  const [eventId, setEventId] = useState<string | null>(null);

  useEffect(() => {
    setOrigin(window.location.origin);
    setEventId(new URLSearchParams(window.location.search).get("event"));
  }, []);

  useEffect(() => {
    const controller = new AbortController();
    setState({ status: "loading" });
    api("GetLink", { linkId }, { signal: controller.signal })
      .then(({ linkUrl }) => {
        const expiry = parseLinkExpiry(linkUrl);
        setState({ status: "ready", linkUrl, expiry, isExpiredOnLoad: expiry.getTime() <= Date.now() });
      })
      .catch((err) => {
        if (isAbortError(err)) return;
        setState({ status: "failed", error: describeError(err, { notFound: UNKNOWN_LINK }) });
      });
    return () => controller.abort();
  }, [linkId]);

  const isLive = state.status === "ready" && !state.isExpiredOnLoad;
  usePingLink(linkId, isLive);

  if (state.status === "loading" || !origin) {
    return (
      <div className="flex h-dvh items-center justify-center bg-zinc-950 text-zinc-400">
        <Spinner className="size-6" />
      </div>
    );
  }

  return (
    <div className="flex h-dvh flex-col bg-zinc-950 text-zinc-100">
      <header className="flex flex-wrap items-center gap-3 border-b border-zinc-800 px-4 py-2.5">
        <a href="/" className="flex items-center gap-2 font-semibold tracking-tight">
          <LogoMark />
          <span>Tapscope</span>
        </a>
        <span className="flex-1" />
        {/* Only a live link is worth sharing: not one that does not exist or has expired. */}
        {state.status === "ready" && !state.isExpiredOnLoad ? (
          <>
            <Countdown expiry={state.expiry} />
            <ShareBox url={`${origin}/link/${linkId}`} />
          </>
        ) : null}
      </header>
      <main className="flex min-h-0 flex-1 flex-col p-4">
        {state.status === "failed" ? (
          <ErrorNotice error={state.error} className="m-auto max-w-md p-6 text-center" />
        ) : state.isExpiredOnLoad ? (
          <div data-testid="expired-panel" className="m-auto max-w-md rounded-xl border border-zinc-800 bg-zinc-900 p-8 text-center">
            <p className="text-base font-semibold text-zinc-100">{EXPIRED_TITLE}</p>
            <p className="mt-2 text-sm text-zinc-400">{EXPIRED_HINT}</p>
          </div>
        ) : (
          <FilteredLiveFrame
            src={iframerSrc({ commitHash, socketUrl: state.linkUrl, eventId })}
            suggestionsScope="shared-links"
            title="Shared live requests"
          />
        )}
      </main>
    </div>
  );
}

/** The link id of /link/{id} or /link/{something}/{id}. */
export function linkIdFromPath(splat: string): string | null {
  const parts = splat.split("/").filter(Boolean);
  return parts.at(-1) ?? null;
}
