import { Outlet, type RouteObject, redirect } from "react-router";
import { Document } from "~/ui/document.tsx";
import { BillingScreen } from "~/ui/pages/dashboard/billing-screen.tsx";
import { DashboardLayout, dashboardLoader } from "~/ui/pages/dashboard/dashboard-layout.tsx";
import { DashboardIndex, LiveScreen } from "~/ui/pages/dashboard/live-screen.tsx";
import { MinifiedResultsPage } from "~/ui/pages/dashboard/minified-page.tsx";
import { RequestsRoute } from "~/ui/pages/dashboard/requests-route.tsx";
import { TokensScreen } from "~/ui/pages/dashboard/tokens-screen.tsx";
import { UsersScreen } from "~/ui/pages/dashboard/users-screen.tsx";
import { DocsPage, docsLoader } from "~/ui/pages/docs/docs-page.tsx";
import { RootErrorBoundary } from "~/ui/pages/error/root-error-boundary.tsx";
import { IframerPage } from "~/ui/pages/frames/iframer-page.tsx";
import { LinkViewerPage } from "~/ui/pages/frames/link-viewer-page.tsx";
import { LoginLinkPage, loginLinkLoader } from "~/ui/pages/login/login-link-page.tsx";
import { LoginPage, loginLoader } from "~/ui/pages/login/login-page.tsx";
import { BlogIndexPage } from "~/ui/pages/marketing/blog/blog-index.tsx";
import { GrpcDebuggingPost } from "~/ui/pages/marketing/blog/grpc-debugging.tsx";
import { Http2PrefacePost } from "~/ui/pages/marketing/blog/http2-preface.tsx";
import { ChangelogPage, changelogLoader, DiscordPage, discordLoader } from "~/ui/pages/marketing/changelog-page.tsx";
import { CustomersPage, customersLoader } from "~/ui/pages/marketing/customers-page.tsx";
import { LandingPage, landingLoader } from "~/ui/pages/marketing/landing/landing-page.tsx";
import { PricingPage } from "~/ui/pages/marketing/pricing-page.tsx";

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
      { index: true, loader: landingLoader, Component: LandingPage },
      { path: "pricing", Component: PricingPage },
      { path: "docs", loader: docsLoader, Component: DocsPage },
      { path: "docs/:page", loader: docsLoader, Component: DocsPage },
      { path: "changelog", loader: changelogLoader, Component: ChangelogPage },
      { path: "discord", loader: discordLoader, Component: DiscordPage },
      { path: "customers", loader: customersLoader, Component: CustomersPage },
      { path: "customers/:customer", loader: customersLoader, Component: CustomersPage },
      { path: "blog", Component: BlogIndexPage },
      { path: "blog/http2-preface", Component: Http2PrefacePost },
      { path: "blog/grpc-debugging", Component: GrpcDebuggingPost },
      { path: "link", loader: () => redirect("/") },
      { path: "link/*", loader: linkLoader, Component: LinkViewerPage },
      { path: "login", loader: loginLoader, Component: LoginPage },
      // A mailed sign-in link's page: never revalidated, so its one POST is not sent again by a navigation.
      { path: "login/link", loader: loginLinkLoader, shouldRevalidate: () => false, Component: LoginLinkPage },
      {
        id: "dashboard",
        path: "dashboard",
        loader: dashboardLoader,
        // The session is checked on entry; in-app navigation does not need to ask again.
        shouldRevalidate: () => false,
        Component: DashboardLayout,
        children: [
          { index: true, Component: DashboardIndex },
          { path: "billing", Component: BillingScreen },
          { path: ":namespaceName", loader: namespaceIndexLoader },
          { path: ":namespaceName/live", Component: LiveScreen },
          { path: ":namespaceName/requests", Component: RequestsRoute },
          { path: ":namespaceName/tokens", Component: TokensScreen },
          { path: ":namespaceName/users", Component: UsersScreen },
        ],
      },
      { path: "iframer", Component: IframerPage },
      { path: "minified", Component: MinifiedResultsPage },
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
