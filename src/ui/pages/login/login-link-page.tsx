import { useEffect, useRef, useState } from "react";
import { type LoaderFunctionArgs, redirect, useLoaderData } from "react-router";
import type { ApiResponse } from "~/lib/protocol/api/calls.ts";
import { Button } from "~/ui/components/button.tsx";
import { ErrorNotice } from "~/ui/components/error-notice.tsx";
import { Logo } from "~/ui/components/logo.tsx";
import { Spinner } from "~/ui/components/spinner.tsx";
import { ApiError, api, describeError, type ErrorText } from "~/ui/lib/api.ts";

/** The page a mailed sign-in link opens. Rendering it spends nothing; the sign-in is the POST it sends. */
export function loginLinkLoader({ request }: LoaderFunctionArgs) {
  const token = new URL(request.url).searchParams.get("token");
  if (!token) throw redirect("/login?error=link_invalid");
  return { token };
}

export type FinishLogin = (token: string, confirm: boolean) => Promise<ApiResponse<"FinishEmailLogin">>;

const finishEmailLogin: FinishLogin = (token, confirm) => api("FinishEmailLogin", confirm ? { token, confirm } : { token });

type State = { kind: "working" } | { kind: "confirm"; email: string } | { kind: "failed"; error: ErrorText };

/**
 * Opened in the browser that asked for the link: signs in and moves on. Opened anywhere else: names the account the link
 * signs into and asks first, since whoever mailed a link to their own address could have sent it on.
 */
export function LoginLinkPage({
  finish = finishEmailLogin,
  go = (path) => window.location.replace(path),
}: {
  finish?: FinishLogin;
  go?: (path: string) => void;
}) {
  const { token } = useLoaderData<typeof loginLinkLoader>();
  const [state, setState] = useState<State>({ kind: "working" });
  const isStarted = useRef(false);

  async function send(confirm: boolean) {
    setState({ kind: "working" });
    try {
      const answer = await finish(token, confirm);
      if (answer.signedIn) go(answer.next);
      else setState({ kind: "confirm", email: answer.email });
    } catch (err) {
      if (err instanceof ApiError && err.status === 401) go("/login?error=link_invalid");
      else setState({ kind: "failed", error: describeError(err) });
    }
  }

  // biome-ignore lint/correctness/useExhaustiveDependencies: sent once, when the page has loaded in a browser
  useEffect(() => {
    if (isStarted.current) return;
    isStarted.current = true;
    void send(false);
  }, []);

  return (
    <main className="flex min-h-dvh flex-col px-6 py-8 sm:px-12">
      <title>Sign in | Tapscope</title>
      <Logo />
      <div className="mx-auto flex w-full max-w-sm flex-1 flex-col justify-center py-12">
        {state.kind === "working" ? (
          <>
            <p role="status" className="flex items-center gap-2 text-sm text-zinc-400">
              <Spinner className="size-4" /> Signing you in…
            </p>
            <noscript>
              <p className="mt-3 text-sm text-zinc-400">Signing in needs JavaScript: turn it on and open the link again.</p>
            </noscript>
          </>
        ) : state.kind === "confirm" ? (
          <section aria-label="Confirm sign-in">
            <h1 className="text-2xl font-semibold tracking-tight text-zinc-100">
              Sign in as <span className="break-all">{state.email}</span>?
            </h1>
            <p className="mt-3 text-sm leading-6 text-zinc-400">
              This link was asked for in another browser. Continue only if you asked for it yourself: a link someone sends you would sign
              you into their account, and what you do there would be theirs to see.
            </p>
            <div className="mt-6 flex flex-col gap-2 sm:flex-row">
              <Button onClick={() => void send(true)} className="break-all sm:flex-1">
                Sign in as {state.email}
              </Button>
              <Button variant="secondary" onClick={() => go("/login")}>
                Cancel
              </Button>
            </div>
          </section>
        ) : (
          <ErrorNotice lead="Could not sign you in." error={state.error}>
            {" "}
            <a className="underline" href="/login">
              Back to sign-in
            </a>
          </ErrorNotice>
        )}
      </div>
    </main>
  );
}
