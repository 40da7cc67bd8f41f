import { useState } from "react";
import type { Invitation } from "~/lib/protocol/api/users.ts";
import { Button } from "~/ui/components/button.tsx";
import { Spinner } from "~/ui/components/spinner.tsx";
import { useDashboard } from "~/ui/pages/dashboard/dashboard-state.ts";

/** Invitations waiting for the user's answer, above whatever screen is open: nobody joins a namespace unasked. */
export function InvitationsBanner() {
  const { invitations } = useDashboard();
  if (invitations.length === 0) return null;
  return (
    <section aria-label="Invitations" className="mx-4 mt-14 space-y-2 sm:mx-6 md:mt-4">
      {invitations.map((invitation) => (
        <InvitationRow key={invitation.invitationId} invitation={invitation} />
      ))}
    </section>
  );
}

/**
 * A new user who was invited before having anything of their own: the invitations, and their own namespace one click
 * away, instead of an onboarding they did not ask for.
 */
export function InvitedWelcome() {
  const { invitations, startOwnNamespace } = useDashboard();
  const [isStarting, setIsStarting] = useState(false);
  return (
    <div className="mx-auto w-full max-w-xl px-5 pt-16 pb-10 sm:px-10 md:pt-16">
      <title>Invitations | Tapscope</title>
      <h1 className="text-xl font-semibold tracking-tight text-zinc-100">You are invited</h1>
      <p className="mt-1 text-sm text-zinc-400">Accept to see the requests of a team's namespace, or start your own.</p>
      <div className="mt-6 space-y-2">
        {invitations.map((invitation) => (
          <InvitationRow key={invitation.invitationId} invitation={invitation} />
        ))}
      </div>
      <Button
        variant="secondary"
        className="mt-6"
        disabled={isStarting}
        onClick={() => {
          setIsStarting(true);
          void startOwnNamespace().finally(() => setIsStarting(false));
        }}
      >
        {isStarting ? <Spinner className="size-3.5" /> : null}
        Start my own namespace instead
      </Button>
    </div>
  );
}

function InvitationRow({ invitation }: { invitation: Invitation }) {
  const { acceptInvitation, declineInvitation } = useDashboard();
  const [busy, setBusy] = useState<"accept" | "decline" | null>(null);
  const answer = (kind: "accept" | "decline") => {
    setBusy(kind);
    void (kind === "accept" ? acceptInvitation(invitation) : declineInvitation(invitation)).finally(() => setBusy(null));
  };
  return (
    <article
      aria-label={`Invitation to ${invitation.namespaceName}`}
      className="flex flex-col gap-3 rounded-lg border border-emerald-900/60 bg-emerald-950/30 px-4 py-3 text-sm sm:flex-row sm:items-center"
    >
      <p className="min-w-0 flex-1 break-words text-zinc-300">
        {invitation.invitedByEmail ? <span className="text-zinc-100">{invitation.invitedByEmail}</span> : "Someone"} invited you to the
        namespace <span className="font-medium text-zinc-100">{invitation.namespaceName}</span>.
      </p>
      <div className="flex shrink-0 gap-2">
        <Button onClick={() => answer("accept")} disabled={busy !== null}>
          {busy === "accept" ? <Spinner className="size-3.5" /> : null}
          Accept
        </Button>
        <Button variant="secondary" onClick={() => answer("decline")} disabled={busy !== null}>
          {busy === "decline" ? <Spinner className="size-3.5" /> : null}
          Decline
        </Button>
      </div>
    </article>
  );
}
