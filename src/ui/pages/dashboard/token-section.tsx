import { useCallback, useEffect, useState } from "react";
import type { Token } from "~/lib/protocol/api/tokens.ts";
import { MAX_TOKEN_LABEL, type TokenScope, tokenForbiddenText } from "~/lib/protocol/token-messages.ts";
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
  /** Resolves with the new token (shown once) and its id. */
  generate: () => Promise<{ token: string; tokenId: string }>;
  remove: (tokenId: string) => Promise<void>;
  rename: (tokenId: string, label: string) => Promise<void>;
};

export function deleteConfirmText(name: string): string {
  return `Are you sure you want to delete token ${name}? This action cannot be undone.`;
}

type Dialog =
  | { kind: "created"; token: string; tokenId: string }
  | { kind: "confirm-delete"; token: Token }
  | { kind: "forbidden"; text: string }
  | null;

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
      const { token, tokenId } = await calls.generate();
      setDialog({ kind: "created", token, tokenId });
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

  /** Names a token; true when it was saved. */
  async function rename(tokenId: string, label: string): Promise<boolean> {
    try {
      await calls.rename(tokenId, label);
      await refresh();
      return true;
    } catch (err) {
      handleFailure(err, "rename");
      return false;
    }
  }

  function handleFailure(err: unknown, action: "delete" | "generate" | "rename") {
    if (isAbortError(err)) return;
    if (err instanceof ApiError && err.status === 403) {
      setDialog({
        kind: "forbidden",
        text: tokenForbiddenText(action, scope),
      });
      return;
    }
    const lead = { delete: "Could not delete the token", generate: "Could not generate a token", rename: "Could not rename the token" }[
      action
    ];
    alertError(lead, err);
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
              <TokenRow
                key={token.tokenId}
                token={token}
                now={now}
                onDelete={() => setDialog({ kind: "confirm-delete", token })}
                onRename={(label) => rename(token.tokenId, label)}
              />
            ))}
          </ul>
        )}
      </div>
      {dialog?.kind === "created" ? (
        <NewTokenDialog
          token={dialog.token}
          onClose={(label) => {
            const { tokenId } = dialog;
            setDialog(null);
            if (label.trim() !== "") void rename(tokenId, label);
          }}
        />
      ) : null}
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

/**
 * A token: its name (click to edit), the masked token (its last part always whole), who made it and when, when it was
 * last used; delete at the row's end (on hover with a mouse, always on a touch screen).
 */
export function TokenRow({
  token,
  now,
  onDelete,
  onRename = async () => false,
}: {
  token: Token;
  now: number;
  onDelete: () => void;
  onRename?: (label: string) => Promise<boolean>;
}) {
  const masked = maskToken(token.name);
  const [draft, setDraft] = useState<string | null>(null);
  const save = async () => {
    if (draft === null) return;
    if (draft.trim() === token.label) return setDraft(null);
    if (await onRename(draft)) setDraft(null);
  };
  return (
    <li className="group grid grid-cols-[minmax(0,1fr)_auto] items-center gap-x-4 gap-y-1 px-4 py-3 text-sm hover:bg-zinc-900/60 sm:grid-cols-[minmax(0,1fr)_minmax(0,16rem)_auto]">
      <div className="min-w-0">
        <div className="flex min-w-0 items-center gap-2">
          {draft === null ? (
            <button
              type="button"
              onClick={() => setDraft(token.label)}
              title="Rename"
              aria-label={`Rename token ${masked}`}
              className={`min-w-0 truncate rounded text-left hover:text-zinc-100 ${token.label ? "text-zinc-100" : "text-zinc-500 italic"}`}
            >
              {token.label || "Unnamed"}
            </button>
          ) : (
            <form
              className="flex min-w-0 flex-1 items-center gap-1"
              onSubmit={(event) => {
                event.preventDefault();
                void save();
              }}
            >
              <input
                aria-label={`Name of token ${masked}`}
                value={draft}
                maxLength={MAX_TOKEN_LABEL}
                // biome-ignore lint/a11y/noAutofocus: the user just asked to rename this token
                autoFocus
                onChange={(event) => setDraft(event.target.value)}
                onKeyDown={(event) => {
                  if (event.key === "Escape") setDraft(null);
                }}
                className="min-w-0 flex-1 rounded-md border border-zinc-700 bg-zinc-950 px-2 py-0.5 text-sm text-zinc-100 focus:border-zinc-500 focus:outline-none"
              />
              <button type="submit" className="rounded px-2 py-0.5 text-xs text-zinc-300 hover:bg-zinc-800">
                Save
              </button>
            </form>
          )}
          {isNewToken(token.createTime, now) ? (
            <span className="shrink-0 rounded bg-emerald-500/15 px-1.5 py-0.5 text-[10px] font-semibold tracking-wide text-emerald-400">
              NEW
            </span>
          ) : null}
        </div>
        <code className="block font-mono text-xs whitespace-nowrap text-zinc-400">{masked}</code>
      </div>
      <div className="col-span-2 row-start-2 min-w-0 text-xs text-zinc-500 sm:col-span-1 sm:row-start-auto sm:text-right">
        <p className="truncate text-zinc-400" title={token.creatorEmail ?? undefined}>
          {token.creatorEmail ?? "unknown"}
        </p>
        <p>
          created {formatAge(token.createTime, now)} ·{" "}
          {token.lastUsedTime ? `last used ${formatAge(token.lastUsedTime, now)}` : "never used"}
        </p>
      </div>
      <button
        type="button"
        onClick={onDelete}
        aria-label={`Delete token ${masked}`}
        className="col-start-2 row-start-1 rounded p-1 text-zinc-500 hover:bg-zinc-800 hover:text-red-400 focus:opacity-100 sm:col-start-3 pointer-fine:opacity-0 pointer-fine:group-hover:opacity-100"
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
