import { type LoaderFunctionArgs, redirect, useLoaderData } from "react-router";
import { loginErrorMessage } from "~/lib/login-errors.ts";
import { Logo } from "~/ui/components/logo.tsx";
import { pageEnv } from "~/ui/env.ts";
import { LoginForm } from "~/ui/pages/login/login-form.tsx";
import { usePublicConfig } from "~/ui/shell.tsx";

/** Only same-origin paths survive as `next`; anything else is dropped. */
export function safeNext(raw: string | null): string | null {
  if (!raw || !raw.startsWith("/") || raw.startsWith("//") || raw.startsWith("/\\")) return null;
  return raw;
}

export async function loginLoader({ request, context }: LoaderFunctionArgs) {
  const self = await pageEnv(context).getSelf(request);
  if (self) throw redirect("/dashboard");
  const params = new URL(request.url).searchParams;
  // The sign-in callbacks come back here with a reason code when a link or provider round trip failed.
  return { next: safeNext(params.get("next")), error: loginErrorMessage(params.get("error")) };
}

const marqueeRows = [
  ["Node.js", "Python", "Go", "Java", "PHP", "Rust", "Ruby"],
  ["Docker", "Kubernetes", "AWS", "Azure", "Google Cloud"],
];

export function LoginPage() {
  const { next, error } = useLoaderData<typeof loginLoader>();
  const config = usePublicConfig();
  return (
    <div className="grid min-h-dvh lg:grid-cols-2">
      <title>Login | Tapscope</title>
      <main className="flex flex-col px-6 py-8 sm:px-12">
        <Logo />
        <div className="mx-auto flex w-full max-w-sm flex-1 flex-col justify-center py-12">
          <h1 className="text-2xl font-semibold tracking-tight text-zinc-100">Get started</h1>
          <p className="mt-1 mb-8 text-sm text-zinc-400">Sign into your account</p>
          {error ? (
            <p role="alert" className="mb-6 rounded-md border border-red-900/60 bg-red-950/40 px-3 py-2 text-sm text-red-300">
              {error}
            </p>
          ) : null}
          <LoginForm next={next} hasGoogle={config.hasGoogle} hasGithub={config.hasGithub} supportEmail={config.supportEmail} />
        </div>
      </main>
      <aside className="relative hidden flex-col justify-center gap-10 overflow-hidden border-l border-zinc-900 bg-zinc-900/40 px-12 lg:flex">
        <figure className="max-w-lg">
          <blockquote className="text-xl leading-8 text-zinc-200">
            “We saw every request our service made in production within five minutes, without touching a line of code.”
          </blockquote>
          <figcaption className="mt-4 text-sm text-zinc-500">Platform lead, early customer</figcaption>
        </figure>
        <div className="space-y-4" aria-hidden="true">
          {marqueeRows.map((row, index) => (
            <div
              key={row[0]}
              className="flex overflow-hidden [mask-image:linear-gradient(to_right,transparent,black_15%,black_85%,transparent)]"
            >
              <div className={`flex shrink-0 gap-3 pr-3 ${index % 2 ? "animate-marquee-reverse" : "animate-marquee"}`}>
                {[...row, ...row].map((name, i) => (
                  <span
                    // biome-ignore lint/suspicious/noArrayIndexKey: the row is drawn twice for the seamless loop
                    key={`${name}-${i}`}
                    className="rounded-full border border-zinc-800 bg-zinc-900 px-3 py-1 font-mono text-xs whitespace-nowrap text-zinc-400"
                  >
                    {name}
                  </span>
                ))}
              </div>
            </div>
          ))}
        </div>
      </aside>
    </div>
  );
}
