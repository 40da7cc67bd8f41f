import { isRouteErrorResponse, useRouteError } from "react-router";
import { Document } from "~/ui/document.tsx";
import { AppErrorScreen } from "~/ui/pages/error/app-error-screen.tsx";

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

function RouterFallback({ status, statusText }: { status: number; statusText: string }) {
  return (
    <main className="flex min-h-dvh flex-col items-center justify-center gap-3 p-6 text-center">
      <title>{`${status} | Tapscope`}</title>
      <h1 className="text-2xl font-semibold text-zinc-100">Unexpected Application Error!</h1>
      <p className="font-mono text-sm text-zinc-400">
        {status} {statusText}
      </p>
      <a href="/" className="mt-4 text-sm text-zinc-300 underline hover:text-zinc-100">
        Back to Tapscope
      </a>
    </main>
  );
}
