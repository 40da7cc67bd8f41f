import { type FormEvent, useState } from "react";
import { toError } from "~/lib/errors.ts";
import type { EmailLoginResponse } from "~/lib/protocol/api/auth.ts";
import { Button } from "~/ui/components/button.tsx";
import { Spinner } from "~/ui/components/spinner.tsx";
import { alertError, api } from "~/ui/lib/api.ts";
import { errorTags, reportEvent } from "~/ui/lib/events.ts";

export type SubmitEmail = (email: string, next: string | null) => Promise<EmailLoginResponse>;

const submitEmailLogin: SubmitEmail = (email, next) => api("EmailLogin", next ? { email, next } : { email });

type State = { kind: "idle" } | { kind: "submitting" } | { kind: "sent"; email: string; isLogged: boolean };

/** The form's states: idle -> submitting (disabled, spinner) -> sent, or back to idle after an alert. */
export function LoginForm({
  next,
  hasGoogle,
  hasGithub,
  supportEmail,
  submitEmail = submitEmailLogin,
  alert = (message) => window.alert(message),
}: {
  next: string | null;
  hasGoogle: boolean;
  hasGithub: boolean;
  supportEmail: string;
  submitEmail?: SubmitEmail;
  alert?: (message: string) => void;
}) {
  const [state, setState] = useState<State>({ kind: "idle" });
  const [email, setEmail] = useState("");

  async function onSubmit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    if (state.kind === "submitting") return;
    const address = email.trim();
    setState({ kind: "submitting" });
    let failure: unknown;
    let isLogged = false;
    try {
      const answer = await submitEmail(address, next);
      if (answer?.error) failure = new Error(answer.error);
      isLogged = answer?.delivery === "log";
    } catch (err) {
      failure = toError(err);
    }
    if (failure instanceof Error) {
      void reportEvent("EmailSubmitError", { error_message: failure.message, ...errorTags(failure) });
      alertError("login failed", failure, alert);
      setState({ kind: "idle" });
      return;
    }
    setState({ kind: "sent", email: address, isLogged });
  }

  if (state.kind === "sent" && state.isLogged) {
    return (
      <div role="status" className="rounded-lg border border-amber-500/30 bg-amber-500/5 p-4 text-sm leading-6 text-zinc-300">
        This server cannot send e-mail (no SMTP server is set up), so the sign-in link for{" "}
        <span className="font-medium text-zinc-100">{state.email}</span> was written to the server's log, on a line beginning{" "}
        <code className="font-mono text-xs text-zinc-100">magic link for</code>. Open that link in this browser to continue. If you do not
        run this server, ask the person who does. Need help?{" "}
        <a className="text-zinc-100 underline" href={`mailto:${supportEmail}`}>
          Contact support
        </a>
        .
      </div>
    );
  }

  if (state.kind === "sent") {
    return (
      <div role="status" className="rounded-lg border border-zinc-800 bg-zinc-900/60 p-4 text-sm leading-6 text-zinc-300">
        We emailed a magic link to <span className="font-medium text-zinc-100">{state.email}</span>. Click the link to continue. Need help?{" "}
        <a className="text-zinc-100 underline" href={`mailto:${supportEmail}`}>
          Contact support
        </a>
        .
      </div>
    );
  }

  const query = next ? `?next=${encodeURIComponent(next)}` : "";
  const isSubmitting = state.kind === "submitting";
  return (
    <div className="space-y-4">
      {hasGoogle || hasGithub ? (
        <>
          <div className="space-y-2">
            {hasGoogle ? <ProviderLink href={`/api/GoogleRedirect${query}`} label="Continue with Google" icon={<GoogleIcon />} /> : null}
            {hasGithub ? <ProviderLink href={`/api/GithubRedirect${query}`} label="Continue with Github" icon={<GithubIcon />} /> : null}
          </div>
          <div className="flex items-center gap-3 text-xs text-zinc-500">
            <span className="h-px flex-1 bg-zinc-800" />
            or
            <span className="h-px flex-1 bg-zinc-800" />
          </div>
        </>
      ) : null}
      <form onSubmit={onSubmit} className="space-y-3">
        <input
          type="email"
          name="email"
          required
          autoComplete="email"
          aria-label="Email"
          placeholder="Enter your email..."
          value={email}
          onChange={(event) => setEmail(event.target.value)}
          disabled={isSubmitting}
          className="w-full rounded-md border border-zinc-800 bg-zinc-900 px-3 py-2 text-sm text-zinc-100 placeholder:text-zinc-500 focus:border-zinc-600 focus:outline-none"
        />
        <Button type="submit" className="w-full" disabled={isSubmitting}>
          {isSubmitting ? <Spinner /> : null}
          Sign in
        </Button>
      </form>
    </div>
  );
}

function ProviderLink({ href, label, icon }: { href: string; label: string; icon: React.ReactNode }) {
  return (
    <a
      href={href}
      className="flex w-full items-center justify-center gap-2 rounded-md border border-zinc-800 bg-zinc-900 px-3 py-2 text-sm font-medium text-zinc-100 hover:bg-zinc-800"
    >
      {icon}
      {label}
    </a>
  );
}

function GoogleIcon() {
  return (
    <svg viewBox="0 0 24 24" className="size-4" aria-hidden="true">
      <path
        fill="#EA4335"
        d="M12 10.2v3.9h5.5c-.2 1.3-1.6 3.8-5.5 3.8-3.3 0-6-2.7-6-6.1s2.7-6.1 6-6.1c1.9 0 3.1.8 3.8 1.5l2.6-2.5C16.8 3.2 14.6 2.2 12 2.2 6.6 2.2 2.2 6.6 2.2 12s4.4 9.8 9.8 9.8c5.7 0 9.4-4 9.4-9.6 0-.6-.1-1.1-.2-1.6H12z"
      />
    </svg>
  );
}

function GithubIcon() {
  return (
    <svg viewBox="0 0 24 24" className="size-4 fill-zinc-100" aria-hidden="true">
      <path d="M12 .5C5.7.5.5 5.7.5 12c0 5.1 3.3 9.4 7.9 10.9.6.1.8-.3.8-.6v-2c-3.2.7-3.9-1.5-3.9-1.5-.5-1.3-1.3-1.7-1.3-1.7-1-.7.1-.7.1-.7 1.2.1 1.8 1.2 1.8 1.2 1 1.8 2.7 1.3 3.4 1 .1-.8.4-1.3.7-1.6-2.6-.3-5.3-1.3-5.3-5.7 0-1.3.5-2.3 1.2-3.1-.1-.3-.5-1.5.1-3.1 0 0 1-.3 3.2 1.2a11 11 0 0 1 5.8 0c2.2-1.5 3.2-1.2 3.2-1.2.6 1.6.2 2.8.1 3.1.8.8 1.2 1.9 1.2 3.1 0 4.4-2.7 5.4-5.3 5.7.4.4.8 1.1.8 2.2v3.3c0 .3.2.7.8.6 4.6-1.5 7.9-5.8 7.9-10.9C23.5 5.7 18.3.5 12 .5z" />
    </svg>
  );
}
