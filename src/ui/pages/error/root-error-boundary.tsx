import { isRouteErrorResponse, useRouteError } from "react-router";
import { Document } from "~/ui/document.tsx";
import { AppErrorScreen } from "~/ui/pages/error/app-error-screen.tsx";
import { SiteFooter, SiteHeader } from "~/ui/pages/marketing/site-chrome.tsx";

/** Router errors (404 and friends) show the router fallback; anything thrown while rendering the app screen. */
export function RootErrorBoundary() {
  const error = useRouteError();
  return (
    <Document>
      {isRouteErrorResponse(error) ? (
        <RouterFallback status={error.status} statusText={error.statusText} />
      ) : (
        <AppErrorScreen error={error} />
      )}
    </Document>
  );
}

/** The spec's fallback text inside the site's header and footer, so a mistyped address still has a way on. */
function RouterFallback({ status, statusText }: { status: number; statusText: string }) {
  return (
    <div className="flex min-h-dvh flex-col">
      <title>{`${status} | Tapscope`}</title>
      <SiteHeader />
      <main className="mx-auto flex w-full max-w-6xl flex-1 flex-col items-start justify-center gap-3 px-4 py-20">
        <h1 className="text-2xl font-semibold text-zinc-100">Unexpected Application Error!</h1>
        <p className="font-mono text-sm text-zinc-400">
          {status} {statusText}
        </p>
        <p className="text-sm text-zinc-400">
          {status === 404 ? "There is no page at this address. " : ""}
          <a href="/" className="text-zinc-200 underline hover:text-zinc-100">
            Back to Tapscope
          </a>
          , or see the{" "}
          <a href="/docs" className="text-zinc-200 underline hover:text-zinc-100">
            docs
          </a>
          .
        </p>
      </main>
      <SiteFooter />
    </div>
  );
}
