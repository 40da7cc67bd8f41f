import { type FormEvent, useCallback, useEffect, useState } from "react";
import type { NamespaceUser } from "~/lib/protocol/api/users.ts";
import { Button } from "~/ui/components/button.tsx";
import { Spinner } from "~/ui/components/spinner.tsx";
import { alertError, api, isAbortError } from "~/ui/lib/api.ts";
import { formatDate } from "~/ui/lib/format.ts";
import { useDashboard } from "~/ui/pages/dashboard/dashboard-state.ts";
import { DashboardIndex } from "~/ui/pages/dashboard/live-screen.tsx";
import { Screen, SectionTitle } from "~/ui/pages/dashboard/screen.tsx";

export function UsersScreen() {
  const { namespace } = useDashboard();
  if (!namespace) return <DashboardIndex />;
  return <UsersOfNamespace key={namespace.namespaceId} namespaceId={namespace.namespaceId} namespaceName={namespace.name} />;
}

function UsersOfNamespace({ namespaceId, namespaceName }: { namespaceId: string; namespaceName: string }) {
  const [users, setUsers] = useState<NamespaceUser[] | null>(null);
  const [email, setEmail] = useState("");
  const [isInviting, setIsInviting] = useState(false);

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
      await api("AddUser", { namespaceId, email: address });
      setEmail("");
      await refresh();
    } catch (err) {
      if (!isAbortError(err)) alertError("Could not add the user", err);
    } finally {
      setIsInviting(false);
    }
  }

  const admins = users?.filter((user) => user.hasWrite) ?? [];
  const members = users?.filter((user) => !user.hasWrite) ?? [];
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
      {users === null ? (
        <div className="flex items-center gap-2 text-sm text-zinc-500">
          <Spinner className="size-3.5" /> Loading users…
        </div>
      ) : (
        <>
          <UserTable title="Namespace admins" users={admins} />
          <UserTable title="Namespace members" users={members} />
        </>
      )}
    </Screen>
  );
}

function UserTable({ title, users }: { title: string; users: NamespaceUser[] }) {
  return (
    <section aria-label={title}>
      <SectionTitle title={title} count={users.length} />
      <div className="overflow-hidden rounded-lg border border-zinc-800">
        <table className="w-full text-left text-sm">
          <thead className="bg-zinc-900/60 text-xs text-zinc-500">
            <tr>
              <th scope="col" className="px-4 py-2 font-medium">
                Email
              </th>
              <th scope="col" className="w-36 px-4 py-2 font-medium">
                Joined
              </th>
            </tr>
          </thead>
          <tbody className="divide-y divide-zinc-800">
            {users.length === 0 ? (
              <tr>
                <td colSpan={2} className="px-4 py-3 text-zinc-500">
                  Nobody yet.
                </td>
              </tr>
            ) : (
              users.map((user) => (
                <tr key={user.userId ?? `invite:${user.email}`}>
                  <td className="px-4 py-2.5 text-zinc-200">
                    {user.email}
                    {user.isPending ? (
                      <span className="ml-2 rounded bg-zinc-800 px-1.5 py-0.5 text-[10px] font-medium text-zinc-400 uppercase">
                        Invited
                      </span>
                    ) : null}
                  </td>
                  <td className="px-4 py-2.5 whitespace-nowrap text-zinc-400">{formatDate(user.joinTime)}</td>
                </tr>
              ))
            )}
          </tbody>
        </table>
      </div>
    </section>
  );
}
