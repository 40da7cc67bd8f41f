import { type FormEvent, type ReactNode, useCallback, useEffect, useState } from "react";
import { useNavigate } from "react-router";
import type { NamespaceUser } from "~/lib/protocol/api/users.ts";
import { Button } from "~/ui/components/button.tsx";
import { Modal } from "~/ui/components/modal.tsx";
import { Spinner } from "~/ui/components/spinner.tsx";
import { alertError, api, isAbortError } from "~/ui/lib/api.ts";
import { formatDate } from "~/ui/lib/format.ts";
import { type DashboardNamespace, useDashboard } from "~/ui/pages/dashboard/dashboard-state.ts";
import { DashboardIndex } from "~/ui/pages/dashboard/live-screen.tsx";
import { Screen, SectionTitle } from "~/ui/pages/dashboard/screen.tsx";

export function UsersScreen() {
  const { namespace } = useDashboard();
  if (!namespace) return <DashboardIndex />;
  return <UsersOfNamespace key={namespace.namespaceId} namespace={namespace} />;
}

/** What an admin (or a member, of themselves) is about to do, waiting for the confirmation dialog. */
type Pending =
  | { kind: "remove"; user: NamespaceUser }
  | { kind: "leave"; user: NamespaceUser }
  | { kind: "sign-out"; user: NamespaceUser }
  | { kind: "revoke"; user: NamespaceUser }
  | { kind: "delete-namespace" };

function UsersOfNamespace({ namespace }: { namespace: DashboardNamespace }) {
  const { self, reload } = useDashboard();
  const navigate = useNavigate();
  const { namespaceId, name: namespaceName } = namespace;
  const [users, setUsers] = useState<NamespaceUser[] | null>(null);
  const [email, setEmail] = useState("");
  const [isInviting, setIsInviting] = useState(false);
  const [pending, setPending] = useState<Pending | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  /** A notice that something did not happen as usual (no e-mail could be sent). */
  const [isWarning, setWarning] = useState(false);

  const refresh = useCallback(
    async (signal?: AbortSignal) => {
      try {
        setUsers((await api("ListUsers", { namespaceId }, { signal })).users);
      } catch (err) {
        if (!isAbortError(err)) setUsers((current) => current ?? []);
      }
    },
    [namespaceId],
  );

  useEffect(() => {
    const controller = new AbortController();
    void refresh(controller.signal);
    return () => controller.abort();
  }, [refresh]);

  async function invite(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const address = email.trim();
    if (!address) return;
    setIsInviting(true);
    try {
      const answer = await api("AddUser", { namespaceId, email: address });
      setEmail("");
      await refresh();
      setWarning(answer.delivery === "log");
      setNotice(
        answer.delivery === "log"
          ? `${address} is invited. This server cannot send e-mail, so no mail went out (the invitation is in the server log): tell them to sign in at ${window.location.origin}/login with this address to accept it.`
          : answer.delivery === "email"
            ? `${address} is invited: they get an e-mail, and join when they accept.`
            : answer.isPending
              ? `${address} was invited already: they join when they accept.`
              : `${address} is a member already.`,
      );
    } catch (err) {
      if (!isAbortError(err)) alertError("Could not add the user", err);
    } finally {
      setIsInviting(false);
    }
  }

  /** Runs a confirmed action; the dialog stays open (busy) until it is done and the list is read again. */
  async function run(lead: string, action: () => Promise<string | null>) {
    try {
      const done = await action();
      await refresh();
      setPending(null);
      setWarning(false);
      setNotice(done);
    } catch (err) {
      setPending(null);
      if (!isAbortError(err)) alertError(lead, err);
    }
  }

  const isAdmin = users?.some((user) => user.userId === self.userId && user.hasWrite) ?? false;
  // Invited people are not members until they accept: they have their own list.
  const admins = users?.filter((user) => user.hasWrite && !user.isPending) ?? [];
  const members = users?.filter((user) => !user.hasWrite && !user.isPending) ?? [];
  const invited = users?.filter((user) => user.isPending) ?? [];
  const actionsFor = (user: NamespaceUser) => (
    <RowActions user={user} selfId={self.userId} isAdmin={isAdmin} onAction={(kind) => setPending({ kind, user })} />
  );
  return (
    <Screen
      title="Users"
      description={
        <>
          People who can see requests in <span className="text-zinc-200">{namespaceName}</span>.
        </>
      }
    >
      <form onSubmit={invite} className="flex max-w-lg gap-2">
        <input
          type="email"
          required
          aria-label="Email to invite"
          placeholder="teammate@company.com"
          value={email}
          onChange={(event) => setEmail(event.target.value)}
          className="min-w-0 flex-1 rounded-md border border-zinc-800 bg-zinc-900 px-3 py-2 text-sm text-zinc-100 placeholder:text-zinc-500 focus:border-zinc-600 focus:outline-none"
        />
        <Button type="submit" disabled={isInviting}>
          {isInviting ? <Spinner className="size-3.5" /> : null}
          Invite
        </Button>
      </form>
      {notice ? (
        <p role="status" className={`-mt-6 max-w-2xl text-sm ${isWarning ? "text-amber-300" : "text-emerald-400"}`}>
          {notice}
        </p>
      ) : null}
      {users === null ? (
        <div className="flex items-center gap-2 text-sm text-zinc-500">
          <Spinner className="size-3.5" /> Loading users…
        </div>
      ) : (
        <>
          <UserTable title="Namespace admins" users={admins} actions={actionsFor} />
          <UserTable title="Namespace members" users={members} actions={actionsFor} />
          {invited.length > 0 ? <UserTable title="Invited" users={invited} actions={actionsFor} dateLabel="Invited" /> : null}
          {isAdmin ? <DeleteNamespaceSection name={namespaceName} onDelete={() => setPending({ kind: "delete-namespace" })} /> : null}
        </>
      )}
      {pending ? (
        <ConfirmDialog
          pending={pending}
          namespaceName={namespaceName}
          onCancel={() => setPending(null)}
          onConfirm={(options) => {
            switch (pending.kind) {
              case "remove":
                return run("Could not remove the user", async () => {
                  const userId = pending.user.userId ?? "";
                  const { deletedTokens } = await api("RemoveUser", { namespaceId, userId, deleteTokens: options.deleteTokens });
                  const tokens = deletedTokens === 1 ? "1 token" : `${deletedTokens} tokens`;
                  return `${pending.user.email} was removed${options.deleteTokens ? `, with ${tokens} they created` : ""}.`;
                });
              case "leave":
                return run("Could not leave the namespace", async () => {
                  await api("RemoveUser", { namespaceId, userId: pending.user.userId ?? "" });
                  await reload();
                  // Out of this namespace: the dashboard opens another one (this URL now names none of the user's).
                  navigate("/dashboard", { replace: true });
                  return null;
                });
              case "sign-out":
                return run("Could not sign the user out", async () => {
                  const { endedSessions } = await api("EndUserSessions", { namespaceId, userId: pending.user.userId ?? "" });
                  return `${pending.user.email} was signed out (${endedSessions === 1 ? "1 session" : `${endedSessions} sessions`}).`;
                });
              case "revoke":
                return run("Could not revoke the invitation", async () => {
                  await api("RevokeInvitation", { invitationId: pending.user.invitationId ?? "" });
                  return `The invitation to ${pending.user.email} was revoked.`;
                });
              case "delete-namespace":
                return run("Could not delete the namespace", async () => {
                  await api("DeleteNamespace", { namespaceId });
                  await reload();
                  // Out of this namespace: the dashboard opens another one (this URL now names none of the user's).
                  navigate("/dashboard", { replace: true });
                  return null;
                });
            }
          }}
        />
      ) : null}
    </Screen>
  );
}

function RowActions({
  user,
  selfId,
  isAdmin,
  onAction,
}: {
  user: NamespaceUser;
  selfId: string;
  isAdmin: boolean;
  onAction: (kind: "remove" | "leave" | "sign-out" | "revoke") => void;
}) {
  const small = "rounded px-2 py-1 text-xs font-medium text-zinc-400 hover:bg-zinc-800 hover:text-zinc-100";
  if (user.userId === selfId) {
    return (
      <button type="button" className={small} onClick={() => onAction("leave")}>
        Leave
      </button>
    );
  }
  if (!isAdmin) return null;
  if (user.isPending) {
    return (
      <button type="button" className={small} aria-label={`Revoke the invitation to ${user.email}`} onClick={() => onAction("revoke")}>
        Revoke
      </button>
    );
  }
  return (
    <div className="flex flex-col items-end gap-1 sm:flex-row sm:justify-end">
      <button type="button" className={small} aria-label={`Sign ${user.email} out everywhere`} onClick={() => onAction("sign-out")}>
        Sign out
      </button>
      <button
        type="button"
        className={`${small} hover:text-red-400`}
        aria-label={`Remove ${user.email}`}
        onClick={() => onAction("remove")}
      >
        Remove
      </button>
    </div>
  );
}

function UserTable({
  title,
  users,
  actions,
  dateLabel = "Joined",
}: {
  title: string;
  users: NamespaceUser[];
  actions: (user: NamespaceUser) => ReactNode;
  /** What the date column says: when they joined, or when they were invited. */
  dateLabel?: "Joined" | "Invited";
}) {
  return (
    <section aria-label={title}>
      <SectionTitle title={title} count={users.length} />
      <div className="overflow-hidden rounded-lg border border-zinc-800">
        <table className="w-full table-fixed text-left text-sm">
          <thead className="bg-zinc-900/60 text-xs text-zinc-500">
            <tr>
              <th scope="col" className="px-4 py-2 font-medium">
                Email
              </th>
              <th scope="col" className="hidden w-36 px-4 py-2 font-medium sm:table-cell">
                {dateLabel}
              </th>
              <th scope="col" className="w-24 px-2 py-2 sm:w-40">
                <span className="sr-only">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody className="divide-y divide-zinc-800">
            {users.length === 0 ? (
              <tr>
                <td colSpan={3} className="px-4 py-3 text-zinc-500">
                  Nobody yet.
                </td>
              </tr>
            ) : (
              users.map((user) => (
                <tr key={user.userId ?? `invite:${user.email}`}>
                  <td className="px-4 py-2.5 text-zinc-200">
                    <span className="block truncate" title={user.email}>
                      {user.email}
                    </span>
                    {/* Phones: the date under the address, where the date column has no room. */}
                    <span className="block text-xs text-zinc-500 sm:hidden">
                      {user.isPending ? "Invited" : "Joined"} {formatDate(user.joinTime)}
                    </span>
                    {user.isPending ? (
                      <span className="mt-0.5 hidden rounded bg-zinc-800 px-1.5 py-0.5 text-[10px] font-medium text-zinc-400 uppercase sm:inline-block">
                        Not joined yet
                      </span>
                    ) : null}
                  </td>
                  <td className="hidden px-4 py-2.5 whitespace-nowrap text-zinc-400 sm:table-cell">{formatDate(user.joinTime)}</td>
                  <td className="px-2 py-1.5 text-right">{actions(user)}</td>
                </tr>
              ))
            )}
          </tbody>
        </table>
      </div>
    </section>
  );
}

function DeleteNamespaceSection({ name, onDelete }: { name: string; onDelete: () => void }) {
  return (
    <section aria-label="Delete namespace" className="rounded-lg border border-red-900/50 p-4">
      <h2 className="text-sm font-medium text-zinc-200">Delete namespace</h2>
      <p className="mt-1 text-sm text-zinc-400">
        Deletes <span className="text-zinc-200">{name}</span> with its captured requests, tokens, invitations and shared links, and ends
        every session in it. It cannot be undone.
      </p>
      <Button variant="danger" className="mt-4" onClick={onDelete}>
        Delete namespace…
      </Button>
    </section>
  );
}

function ConfirmDialog({
  pending,
  namespaceName,
  onCancel,
  onConfirm,
}: {
  pending: Pending;
  namespaceName: string;
  onCancel: () => void;
  onConfirm: (options: { deleteTokens: boolean }) => Promise<void>;
}) {
  const [isBusy, setIsBusy] = useState(false);
  const [deleteTokens, setDeleteTokens] = useState(true);
  const [typedName, setTypedName] = useState("");
  const who = "user" in pending ? pending.user.email : "";
  const text = {
    remove: {
      title: `Remove ${who}?`,
      body: `They lose access to ${namespaceName} now: their live views and queries close at once.`,
      action: "Remove",
    },
    leave: {
      title: `Leave ${namespaceName}?`,
      body: "You lose access to it now. An admin can invite you again.",
      action: "Leave",
    },
    "sign-out": {
      title: `Sign ${who} out everywhere?`,
      body: "Every session of theirs ends now, on every device and in every organization they belong to. They can sign in again: remove them to keep them out.",
      action: "Sign out",
    },
    revoke: {
      title: `Revoke the invitation to ${who}?`,
      body: "The invitation stops working; you can invite the address again later.",
      action: "Revoke",
    },
    "delete-namespace": {
      title: `Delete ${namespaceName}?`,
      body: "Its captured requests, tokens, invitations and shared links are deleted, and everyone's live views, queries and tracers on it stop now.",
      action: "Delete namespace",
    },
  }[pending.kind];
  const isBlocked = pending.kind === "delete-namespace" && typedName !== namespaceName;

  async function confirm() {
    setIsBusy(true);
    try {
      await onConfirm({ deleteTokens });
    } finally {
      setIsBusy(false);
    }
  }

  return (
    <Modal
      title={text.title}
      onClose={onCancel}
      actions={
        <>
          <Button variant="secondary" onClick={onCancel} disabled={isBusy}>
            Cancel
          </Button>
          <Button variant="danger" onClick={() => void confirm()} disabled={isBusy || isBlocked}>
            {isBusy ? <Spinner className="size-3.5" /> : null}
            {text.action}
          </Button>
        </>
      }
    >
      <p className="break-words">{text.body}</p>
      {pending.kind === "remove" ? (
        <label className="mt-4 flex items-start gap-2 text-zinc-300">
          <input
            type="checkbox"
            checked={deleteTokens}
            onChange={(event) => setDeleteTokens(event.target.checked)}
            className="mt-0.5 accent-red-500"
          />
          <span>Also delete the tracer tokens they created in this namespace (a token reads everything the namespace holds).</span>
        </label>
      ) : null}
      {pending.kind === "delete-namespace" ? (
        <label className="mt-4 block text-zinc-300">
          Type <span className="font-mono text-zinc-100">{namespaceName}</span> to confirm.
          <input
            aria-label="Namespace name to confirm"
            value={typedName}
            onChange={(event) => setTypedName(event.target.value)}
            autoComplete="off"
            className="mt-2 w-full rounded-md border border-zinc-800 bg-zinc-950 px-3 py-2 font-mono text-sm text-zinc-100 focus:border-zinc-600 focus:outline-none"
          />
        </label>
      ) : null}
    </Modal>
  );
}
