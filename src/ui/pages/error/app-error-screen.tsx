import { useEffect } from "react";
import { errorTags, reportEvent } from "~/ui/lib/events.ts";
import { usePublicConfig } from "~/ui/shell.tsx";

/** The full-screen message for an uncaught render error, reported once. */
export function AppErrorScreen({ error }: { error: unknown }) {
  const { supportEmail } = usePublicConfig();
  const err = error instanceof Error ? error : new Error(typeof error === "string" ? error : JSON.stringify(error));
  useEffect(() => {
    void reportEvent("UncaughtAppBoundaryError", { ...errorTags(err), digest: (err as { digest?: string }).digest });
  }, [err]);
  return (
    <main className="flex min-h-dvh items-center justify-center p-6">
      <title>Error | Tapscope</title>
      <div className="w-full max-w-2xl">
        <SadFace />
        <p className="mt-6 text-zinc-300">
          Tapscope ran into a problem. You can refresh the page to see if that fixes the issue. If not, reach out to{" "}
          <a className="text-zinc-100 underline" href={`mailto:${supportEmail}`}>
            {supportEmail}
          </a>{" "}
          and include the following details
        </p>
        <pre className="mt-6 max-h-96 overflow-auto rounded-lg border border-zinc-800 bg-zinc-900 p-4 font-mono text-xs whitespace-pre-wrap text-zinc-400">
          <span className="text-red-400">{err.name}</span>
          {": "}
          {err.message}
          {err.stack ? `\n\n${err.stack}` : ""}
        </pre>
      </div>
    </main>
  );
}

function SadFace() {
  return (
    <svg
      viewBox="0 0 48 48"
      className="size-14 text-zinc-500"
      fill="none"
      stroke="currentColor"
      strokeWidth="2.5"
      strokeLinecap="round"
      aria-hidden="true"
    >
      <circle cx="24" cy="24" r="21" />
      <path d="M17 19v1M31 19v1" />
      <path d="M15.5 34c2.2-3.2 5.2-4.8 8.5-4.8s6.3 1.6 8.5 4.8" />
    </svg>
  );
}
