import { useCallback, useEffect, useState } from "react";
import type { Token } from "~/lib/protocol/api/tokens.ts";
import { tokenForbiddenText } from "~/lib/protocol/token-messages.ts";
import { ApiError, api, describeError, isAbortError } from "~/ui/lib/api.ts";
import { maskToken } from "~/ui/lib/format.ts";

/** The name given to the token setup makes (it is listed, and renamable, on the Tokens screen). */
export const SETUP_TOKEN_LABEL = "Onboarding";

export type SetupToken =
  | { status: "loading" }
  /** Made for this setup: shown in the commands (the only time it can be). */
  | { status: "new"; token: string; tokenId: string }
  /** The namespace has a token already: it was shown when it was made and cannot be again. */
  | { status: "existing"; existing: Token; masked: string }
  | { status: "failed"; message: string };

/**
 * Tokens made by setup in this page, by namespace, so that opening setup again (another screen and back, a second
 * panel) shows the same token instead of making another. Kept in memory only: a token is never stored in the browser.
 */
const made = new Map<string, { token: string; tokenId: string }>();
/** One look-up or mint at a time per namespace: two panels open at once make one token between them. */
const inFlight = new Map<string, Promise<SetupToken>>();

async function resolveSetupToken(namespaceId: string, signal: AbortSignal): Promise<SetupToken> {
  const { tokens } = await api("ListNamespaceTokens", { namespaceId }, { signal });
  const mine = made.get(namespaceId);
  if (mine && tokens.some((t) => t.tokenId === mine.tokenId)) return { status: "new", ...mine };
  made.delete(namespaceId);
  // A token is made only for a namespace that has none: one that has tokens says so instead of making more.
  const existing = tokens.find((t) => t.label === SETUP_TOKEN_LABEL) ?? tokens[0];
  if (existing) return { status: "existing", existing, masked: maskToken(existing.name) };
  return mint(namespaceId, signal);
}

async function mint(namespaceId: string, signal?: AbortSignal): Promise<SetupToken> {
  const answer = await api("GenerateNamespaceToken", { namespaceId, label: SETUP_TOKEN_LABEL }, { signal });
  made.set(namespaceId, answer);
  return { status: "new", token: answer.token, tokenId: answer.tokenId };
}

function failure(err: unknown): SetupToken {
  return {
    status: "failed",
    message:
      err instanceof ApiError && err.status === 403
        ? tokenForbiddenText("generate", "namespace")
        : `Could not create a token: ${describeError(err).message}`,
  };
}

/**
 * The token the setup commands name: the one setup made earlier in this page, else a new one for a namespace without
 * tokens; a namespace that has tokens gets none made unasked (`replace` makes one: it deletes the setup token it
 * replaces when that one was never used).
 */
export function useSetupToken(namespaceId: string, isActive: boolean): { setup: SetupToken; replace: () => Promise<void> } {
  const [setup, setSetup] = useState<SetupToken>({ status: "loading" });
  useEffect(() => {
    if (!isActive) return;
    const controller = new AbortController();
    let pending = inFlight.get(namespaceId);
    if (!pending) {
      // The shared look-up is not tied to one caller's signal: a caller that goes away leaves it to the others.
      pending = resolveSetupToken(namespaceId, new AbortController().signal).finally(() => inFlight.delete(namespaceId));
      inFlight.set(namespaceId, pending);
    }
    pending.then(
      (next) => {
        if (!controller.signal.aborted) setSetup(next);
      },
      (err: unknown) => {
        if (!controller.signal.aborted && !isAbortError(err)) setSetup(failure(err));
      },
    );
    return () => controller.abort();
  }, [namespaceId, isActive]);

  const replace = useCallback(async () => {
    const current = setup;
    setSetup({ status: "loading" });
    try {
      if (current.status === "existing" && current.existing.label === SETUP_TOKEN_LABEL && current.existing.lastUsedTime === null) {
        await api("DeleteNamespaceToken", { tokenId: current.existing.tokenId });
      }
      setSetup(await mint(namespaceId));
    } catch (err) {
      setSetup(failure(err));
    }
  }, [namespaceId, setup]);

  return { setup, replace };
}
