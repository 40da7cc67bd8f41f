/**
 * The public site's routes (marketing pages, docs, sign-in): one lazily loaded chunk, the only one the landing page
 * needs besides the entry.
 */
export { DocsPage, docsLoader } from "~/ui/pages/docs/docs-page.tsx";
export { LoginLinkPage, loginLinkLoader } from "~/ui/pages/login/login-link-page.tsx";
export { LoginPage, loginLoader } from "~/ui/pages/login/login-page.tsx";
export { BlogIndexPage } from "~/ui/pages/marketing/blog/blog-index.tsx";
export { GrpcDebuggingPost } from "~/ui/pages/marketing/blog/grpc-debugging.tsx";
export { Http2PrefacePost } from "~/ui/pages/marketing/blog/http2-preface.tsx";
export { ChangelogPage, changelogLoader, DiscordPage, discordLoader } from "~/ui/pages/marketing/changelog-page.tsx";
export { CustomersPage, customersLoader } from "~/ui/pages/marketing/customers-page.tsx";
export { LandingPage, landingLoader } from "~/ui/pages/marketing/landing/landing-page.tsx";
export { PricingPage } from "~/ui/pages/marketing/pricing-page.tsx";
