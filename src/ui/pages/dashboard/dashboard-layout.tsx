import { useEffect, useState } from "react";
import { type LoaderFunctionArgs, Outlet, redirect, useLoaderData, useLocation } from "react-router";
import { pageEnv } from "~/ui/env.ts";
import { readLocal, storageKeys, writeLocal } from "~/ui/lib/storage.ts";
import { DashboardContext, useDashboardState } from "~/ui/pages/dashboard/dashboard-state.ts";
import { InvitationsBanner, InvitedWelcome } from "~/ui/pages/dashboard/invitations.tsx";
import { NamespaceNotFound } from "~/ui/pages/dashboard/namespace-not-found.tsx";
import { PanelIcon, SideNav } from "~/ui/pages/dashboard/side-nav.tsx";

export async function dashboardLoader({ request, context }: LoaderFunctionArgs) {
  const self = await pageEnv(context).getSelf(request);
  if (!self) {
    const url = new URL(request.url);
    const isRoot = url.pathname.replace(/\/+$/, "") === "/dashboard";
    throw redirect(isRoot ? "/login" : `/login?next=${encodeURIComponent(url.pathname + url.search)}`);
  }
  return { self };
}

const DESKTOP_QUERY = "(min-width: 768px)";

/**
 * Side navigation beside the screen on desktop (hide/show remembered locally); on phones a drawer over
 * the screen that starts closed and closes after each navigation.
 */
export function DashboardLayout() {
  const { self } = useLoaderData<typeof dashboardLoader>();
  const state = useDashboardState(self);
  const { pathname } = useLocation();
  const [isNavHidden, setIsNavHidden] = useState(false);
  const [isDrawerOpen, setIsDrawerOpen] = useState(false);

  // Read after hydration so the server and first client render agree.
  useEffect(() => setIsNavHidden(readLocal(storageKeys.navHidden) === "true"), []);
  // biome-ignore lint/correctness/useExhaustiveDependencies: the drawer closes whenever the page changes
  useEffect(() => setIsDrawerOpen(false), [pathname]);

  const setHidden = (hidden: boolean) => {
    setIsNavHidden(hidden);
    writeLocal(storageKeys.navHidden, String(hidden));
  };
  const show = () => (window.matchMedia(DESKTOP_QUERY).matches ? setHidden(false) : setIsDrawerOpen(true));
  const hide = () => (isDrawerOpen ? setIsDrawerOpen(false) : setHidden(true));

  return (
    <DashboardContext.Provider value={state}>
      <div className="flex h-dvh overflow-hidden">
        {isDrawerOpen ? (
          <div className="fixed inset-0 z-30 bg-black/60 md:hidden" onClick={() => setIsDrawerOpen(false)} aria-hidden="true" />
        ) : null}
        {isNavHidden && !isDrawerOpen ? null : (
          <div className={`${isDrawerOpen ? "fixed inset-y-0 left-0 z-40 flex shadow-2xl" : "hidden"} md:static md:flex md:shadow-none`}>
            <SideNav onHide={hide} />
          </div>
        )}
        <div className="relative flex min-w-0 flex-1 flex-col overflow-y-auto">
          <button
            type="button"
            onClick={show}
            aria-label="Show navigation"
            className={`absolute top-3 left-3 z-20 rounded-md border border-zinc-800 bg-zinc-900 p-1.5 text-zinc-400 hover:text-zinc-100 ${isNavHidden ? "" : "md:hidden"}`}
          >
            <PanelIcon />
          </button>
          {state.namespaces?.length === 0 ? (
            <InvitedWelcome />
          ) : state.missingNamespace !== null ? (
            <NamespaceNotFound name={state.missingNamespace} />
          ) : (
            <>
              <InvitationsBanner />
              <Outlet />
            </>
          )}
        </div>
      </div>
    </DashboardContext.Provider>
  );
}
