import { StrictMode, startTransition } from "react";
import { hydrateRoot } from "react-dom/client";
import { createBrowserRouter } from "react-router";
import { RouterProvider } from "react-router/dom";
import { errorTags, reportEvent } from "~/ui/lib/events.ts";
import { routes } from "~/ui/routes.tsx";
import { defaultShell, type PageShell, SHELL_GLOBAL, ShellProvider } from "~/ui/shell.tsx";

const shell = ((window as unknown as Record<string, unknown>)[SHELL_GLOBAL] as PageShell | undefined) ?? defaultShell;
// Hydration data comes from window.__staticRouterHydrationData, written by the server render.
const router = createBrowserRouter(routes);

startTransition(() => {
  hydrateRoot(
    document,
    <StrictMode>
      <ShellProvider shell={shell}>
        <RouterProvider router={router} />
      </ShellProvider>
    </StrictMode>,
    {
      onUncaughtError: (error, info) =>
        void reportEvent("UncaughtAppBoundaryError", { ...errorTags(error), component_stack: info.componentStack }),
    },
  );
});
