import { useCallback, useEffect, useState } from "react";
import type { Token } from "~/lib/protocol/api/tokens.ts";
import { type TokenScope, tokenForbiddenText } from "~/lib/protocol/token-messages.ts";
import { Button } from "~/ui/components/button.tsx";
import { Modal } from "~/ui/components/modal.tsx";
import { Spinner } from "~/ui/components/spinner.tsx";
import { ApiError, alertError, isAbortError } from "~/ui/lib/api.ts";
import { formatAge, isNewToken, maskToken } from "~/ui/lib/format.ts";
import { NewTokenDialog } from "~/ui/pages/dashboard/new-token-dialog.tsx";
import { SectionTitle } from "~/ui/pages/dashboard/screen.tsx";

export type { TokenScope };

export type TokenCalls = {
  list: (signal?: AbortSignal) => Promise<Token[]>;
  generate: () => Promise<string>;
  remove: (tokenId: string) => Promise<void>;
};

export function deleteConfirmText(name: string): string {
  return `Are you sure you want to delete token ${name}? This action cannot be undone.`;
}

type Dialog = { kind: "created"; token: string } | { kind: "confirm-delete"; token: Token } | { kind: "forbidden"; text: string } | null;

/** One list of tokens with create, show-once, and delete with confirmation. */
export function TokenSection({
  title,
  scope,
  calls,
  now: fixedNow,
}: {
  title: string;
  scope: TokenScope;
  calls: TokenCalls;
  now?: number;
}) {
  const [tokens, setTokens] = useState<Token[] | null>(null);
  const [dialog, setDialog] = useState<Dialog>(null);
  const [isBusy, setIsBusy] = useState(false);
  const now = useNow(fixedNow);

  const refresh = useCallback(
    async (signal?: AbortSignal) => {
      try {
        setTokens(await calls.list(signal));
      } catch (err) {
        // Listing failures are ignored; keep what is shown.
        if (!isAbortError(err)) setTokens((current) => current ?? []);
      }
    },
    [calls],
  );

  useEffect(() => {
    const controller = new AbortController();
    void refresh(controller.signal);
    return () => controller.abort();
  }, [refresh]);

  async function generate() {
    setIsBusy(true);
    try {
      const token = await calls.generate();
      setDialog({ kind: "created", token });
      await refresh();
    } catch (err) {
      handleFailure(err, "generate");
    } finally {
      setIsBusy(false);
    }
  }

  async function remove(token: Token) {
    setDialog(null);
    try {
      await calls.remove(token.tokenId);
      await refresh();
    } catch (err) {
      handleFailure(err, "delete");
    }
  }

  function handleFailure(err: unknown, action: "delete" | "generate") {
    if (isAbortError(err)) return;
    if (err instanceof ApiError && err.status === 403) {
      setDialog({ kind: "forbidden", text: tokenForbiddenText(action, scope) });
      return;
    }
    alertError(action === "delete" ? "Could not delete the token" : "Could not generate a token", err);
  }

  return (
    <section aria-label={title}>
      <SectionTitle
        title={title}
        count={tokens?.length}
        action={
          <Button onClick={() => void generate()} disabled={isBusy}>
            {isBusy ? <Spinner className="size-3.5" /> : null}
            Create
          </Button>
        }
      />
      <div className="overflow-hidden rounded-lg border border-zinc-800">
        {tokens === null ? (
          <div className="flex items-center gap-2 p-4 text-sm text-zinc-500">
            <Spinner className="size-3.5" /> Loading tokens…
          </div>
        ) : tokens.length === 0 ? (
          <p className="p-4 text-sm text-zinc-500">No tokens yet. Create one to connect a server.</p>
        ) : (
          <ul className="divide-y divide-zinc-800">
            {tokens.map((token) => (
              <TokenRow key={token.tokenId} token={token} now={now} onDelete={() => setDialog({ kind: "confirm-delete", token })} />
            ))}
          </ul>
        )}
      </div>
      {dialog?.kind === "created" ? <NewTokenDialog token={dialog.token} onClose={() => setDialog(null)} /> : null}
      {dialog?.kind === "confirm-delete" ? (
        <Modal
          title="Delete token"
          onClose={() => setDialog(null)}
          actions={
            <>
              <Button variant="secondary" onClick={() => setDialog(null)}>
                Cancel
              </Button>
              <Button variant="danger" onClick={() => void remove(dialog.token)}>
                Delete
              </Button>
            </>
          }
        >
          {deleteConfirmText(maskToken(dialog.token.name))}
        </Modal>
      ) : null}
      {dialog?.kind === "forbidden" ? (
        <Modal
          title="Permission denied"
          onClose={() => setDialog(null)}
          actions={
            <Button variant="secondary" onClick={() => setDialog(null)}>
              OK
            </Button>
          }
        >
          {dialog.text}
        </Modal>
      ) : null}
    </section>
  );
}

export function TokenRow({ token, now, onDelete }: { token: Token; now: number; onDelete: () => void }) {
  const masked = maskToken(token.name);
  return (
    <li className="group flex items-center gap-4 px-4 py-3 text-sm hover:bg-zinc-900/60">
      <code className="min-w-0 flex-1 truncate font-mono text-zinc-200">{masked}</code>
      {isNewToken(token.createTime, now) ? (
        <span className="rounded bg-emerald-500/15 px-1.5 py-0.5 text-[10px] font-semibold tracking-wide text-emerald-400">NEW</span>
      ) : null}
      <span className="hidden w-48 truncate text-zinc-400 sm:block">{token.creatorEmail ?? "unknown"}</span>
      <span className="w-32 text-right text-zinc-500">{formatAge(token.createTime, now)}</span>
      <button
        type="button"
        onClick={onDelete}
        aria-label={`Delete token ${masked}`}
        className="rounded p-1 text-zinc-500 opacity-0 group-hover:opacity-100 hover:bg-zinc-800 hover:text-red-400 focus:opacity-100"
      >
        <svg viewBox="0 0 20 20" className="size-4" fill="none" stroke="currentColor" strokeWidth="1.5" aria-hidden="true">
          <path d="M4 6h12M8 6V4h4v2m-6 0l1 10h6l1-10" />
        </svg>
      </button>
    </li>
  );
}

/** The current time, ticking every second so ages and NEW badges stay true. */
function useNow(fixed?: number): number {
  const [now, setNow] = useState(() => fixed ?? Date.now());
  useEffect(() => {
    if (fixed !== undefined) return;
    const timer = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(timer);
  }, [fixed]);
  return fixed ?? now;
}
