import { StrictMode, startTransition, useEffect } from "react";
import { hydrateRoot } from "react-dom/client";
import { createBrowserRouter, matchRoutes, type RouteObject } from "react-router";
import { RouterProvider } from "react-router/dom";
import { errorTags, reportEvent } from "~/ui/lib/events.ts";
import { routes } from "~/ui/routes.tsx";
import { defaultShell, HYDRATED_GLOBAL, type PageShell, SHELL_GLOBAL, ShellProvider } from "~/ui/shell.tsx";

/**
 * The server rendered the page with its routes' components. A lazy route still unloaded here would hydrate as nothing,
 * and React would then render the page a second time beside the server's HTML; so the matched routes' chunks load
 * first (the page links them as modulepreload, so they are on their way already).
 */
async function loadMatchedRoutes(table: RouteObject[]): Promise<void> {
  const matches = matchRoutes(table, window.location) ?? [];
  await Promise.all(
    matches.map(async ({ route }) => {
      if (typeof route.lazy !== "function") return;
      Object.assign(route, await route.lazy(), { lazy: undefined });
    }),
  );
}

function MarkHydrated() {
  useEffect(() => {
    (window as unknown as Record<string, unknown>)[HYDRATED_GLOBAL] = true;
  }, []);
  return null;
}

async function start(): Promise<void> {
  try {
    await loadMatchedRoutes(routes);
  } catch (err) {
    // The router tries again as it starts, and shows the error screen if that fails too.
    void reportEvent("RouteChunkLoadFailure", errorTags(err));
  }
  const shell = ((window as unknown as Record<string, unknown>)[SHELL_GLOBAL] as PageShell | undefined) ?? defaultShell;
  // Hydration data comes from window.__staticRouterHydrationData, written by the server render.
  const router = createBrowserRouter(routes);
  startTransition(() => {
    hydrateRoot(
      document,
      <StrictMode>
        <ShellProvider shell={shell}>
          <RouterProvider router={router} />
          <MarkHydrated />
        </ShellProvider>
      </StrictMode>,
      {
        onUncaughtError: (error, info) =>
          void reportEvent("UncaughtAppBoundaryError", { ...errorTags(error), component_stack: info.componentStack }),
      },
    );
  });
}

void start();
