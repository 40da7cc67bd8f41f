import type { ComponentType } from "react";
import { type LoaderFunction, Outlet, type RouteObject, redirect } from "react-router";
import { Document } from "~/ui/document.tsx";
import { RootErrorBoundary } from "~/ui/pages/error/root-error-boundary.tsx";

/**
 * The site's three areas, each its own chunk of the browser bundle, loaded when one of its routes is first matched:
 * the landing page never loads the dashboard. The server renders every route in full; the browser loads the matched
 * area before it hydrates (src/ui/entry-client.tsx).
 */
const areas = {
  site: () => import("~/ui/pages/site-area.ts"),
  dashboard: () => import("~/ui/pages/dashboard-area.ts"),
  frames: () => import("~/ui/pages/frames-area.ts"),
};
export type Area = keyof typeof areas;
/** What a route tells the server and the browser about itself (`handle`). */
export type RouteHandle = { area: Area };

type LazyRoute = { Component: ComponentType; loader?: LoaderFunction };

type AreaModule<A extends Area> = Awaited<ReturnType<(typeof areas)[A]>>;

/** A route whose component (and loader) come from its area's chunk. */
function inArea<A extends Area>(area: A, pick: (module: AreaModule<A>) => LazyRoute) {
  const handle: RouteHandle = { area };
  return { handle, lazy: async () => pick((await areas[area]()) as AreaModule<A>) };
}

function Root() {
  return (
    <Document>
      <Outlet />
    </Document>
  );
}

/** The route table, shared by the server render and the browser. Unknown paths 404. */
export const routes: RouteObject[] = [
  {
    id: "root",
    path: "/",
    Component: Root,
    ErrorBoundary: RootErrorBoundary,
    children: [
      { index: true, ...inArea("site", (m) => ({ loader: m.landingLoader, Component: m.LandingPage })) },
      { path: "pricing", ...inArea("site", (m) => ({ Component: m.PricingPage })) },
      { path: "docs", ...inArea("site", (m) => ({ loader: m.docsLoader, Component: m.DocsPage })) },
      { path: "docs/:page", ...inArea("site", (m) => ({ loader: m.docsLoader, Component: m.DocsPage })) },
      { path: "changelog", ...inArea("site", (m) => ({ loader: m.changelogLoader, Component: m.ChangelogPage })) },
      { path: "discord", ...inArea("site", (m) => ({ loader: m.discordLoader, Component: m.DiscordPage })) },
      { path: "customers", ...inArea("site", (m) => ({ loader: m.customersLoader, Component: m.CustomersPage })) },
      { path: "customers/:customer", ...inArea("site", (m) => ({ loader: m.customersLoader, Component: m.CustomersPage })) },
      { path: "blog", ...inArea("site", (m) => ({ Component: m.BlogIndexPage })) },
      { path: "blog/http2-preface", ...inArea("site", (m) => ({ Component: m.Http2PrefacePost })) },
      { path: "blog/grpc-debugging", ...inArea("site", (m) => ({ Component: m.GrpcDebuggingPost })) },
      { path: "link", loader: () => redirect("/") },
      { path: "link/*", loader: linkLoader, ...inArea("frames", (m) => ({ Component: m.LinkViewerPage })) },
      { path: "login", ...inArea("site", (m) => ({ loader: m.loginLoader, Component: m.LoginPage })) },
      // A mailed sign-in link's page: never revalidated, so its one POST is not sent again by a navigation.
      {
        path: "login/link",
        shouldRevalidate: () => false,
        ...inArea("site", (m) => ({ loader: m.loginLinkLoader, Component: m.LoginLinkPage })),
      },
      {
        id: "dashboard",
        path: "dashboard",
        // The session is checked on entry; in-app navigation does not need to ask again.
        shouldRevalidate: () => false,
        ...inArea("dashboard", (m) => ({ loader: m.dashboardLoader, Component: m.DashboardLayout })),
        children: [
          { index: true, ...inArea("dashboard", (m) => ({ Component: m.DashboardIndex })) },
          { path: "billing", ...inArea("dashboard", (m) => ({ Component: m.BillingScreen })) },
          { path: ":namespaceName", loader: namespaceIndexLoader },
          { path: ":namespaceName/live", ...inArea("dashboard", (m) => ({ Component: m.LiveScreen })) },
          { path: ":namespaceName/requests", ...inArea("dashboard", (m) => ({ Component: m.RequestsRoute })) },
          { path: ":namespaceName/endpoints", ...inArea("dashboard", (m) => ({ Component: m.EndpointsScreen })) },
          { path: ":namespaceName/tokens", ...inArea("dashboard", (m) => ({ Component: m.TokensScreen })) },
          { path: ":namespaceName/users", ...inArea("dashboard", (m) => ({ Component: m.UsersScreen })) },
          { path: ":namespaceName/export", ...inArea("dashboard", (m) => ({ Component: m.ExportScreen })) },
        ],
      },
      { path: "iframer", ...inArea("frames", (m) => ({ Component: m.IframerPage })) },
      { path: "minified", ...inArea("dashboard", (m) => ({ Component: m.MinifiedResultsPage })) },
    ],
  },
];

/** A namespace without a screen opens its Live screen (on the server and on in-app navigation alike). */
function namespaceIndexLoader({ params, request }: { params: Record<string, string | undefined>; request: Request }) {
  throw redirect(`/dashboard/${encodeURIComponent(params.namespaceName ?? "")}/live${new URL(request.url).search}`);
}

/** A link path without an id after /link/ goes home. */
function linkLoader({ params }: { params: Record<string, string | undefined> }) {
  const rest = (params["*"] ?? "").split("/").filter(Boolean);
  if (rest.length === 0) {
    console.error("shared link: missing link id");
    throw redirect("/");
  }
  return null;
}
