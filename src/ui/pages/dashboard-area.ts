/** The dashboard's routes (screens, the requests explorer and its results page): one lazily loaded chunk. */
export { BillingScreen } from "~/ui/pages/dashboard/billing-screen.tsx";
export { DashboardLayout, dashboardLoader } from "~/ui/pages/dashboard/dashboard-layout.tsx";
export { EndpointsScreen } from "~/ui/pages/dashboard/endpoints-screen.tsx";
export { ExportScreen } from "~/ui/pages/dashboard/export-screen.tsx";
export { DashboardIndex, LiveScreen } from "~/ui/pages/dashboard/live-screen.tsx";
export { MinifiedResultsPage } from "~/ui/pages/dashboard/minified-page.tsx";
export { RequestsRoute } from "~/ui/pages/dashboard/requests-route.tsx";
export { TokensScreen } from "~/ui/pages/dashboard/tokens-screen.tsx";
export { UsersScreen } from "~/ui/pages/dashboard/users-screen.tsx";
