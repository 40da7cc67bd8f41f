import { useEffect, useState } from "react";
import { type LoaderFunctionArgs, Outlet, redirect, useLoaderData } from "react-router";
import { pageEnv } from "~/ui/env.ts";
import { readLocal, storageKeys, writeLocal } from "~/ui/lib/storage.ts";
import { DashboardContext, useDashboardState } from "~/ui/pages/dashboard/dashboard-state.ts";
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

export function DashboardLayout() {
  const { self } = useLoaderData<typeof dashboardLoader>();
  const state = useDashboardState(self);
  const [isNavHidden, setIsNavHidden] = useState(false);

  // Read after hydration so the server and first client render agree.
  useEffect(() => setIsNavHidden(readLocal(storageKeys.navHidden) === "true"), []);
  const setHidden = (hidden: boolean) => {
    setIsNavHidden(hidden);
    writeLocal(storageKeys.navHidden, String(hidden));
  };

  return (
    <DashboardContext.Provider value={state}>
      <div className="flex h-dvh overflow-hidden">
        {isNavHidden ? null : <SideNav onHide={() => setHidden(true)} />}
        <div className="relative flex min-w-0 flex-1 flex-col overflow-y-auto">
          {isNavHidden ? (
            <button
              type="button"
              onClick={() => setHidden(false)}
              aria-label="Show navigation"
              className="absolute top-3 left-3 z-20 rounded-md border border-zinc-800 bg-zinc-900 p-1.5 text-zinc-400 hover:text-zinc-100"
            >
              <PanelIcon />
            </button>
          ) : null}
          <Outlet />
        </div>
      </div>
    </DashboardContext.Provider>
  );
}
