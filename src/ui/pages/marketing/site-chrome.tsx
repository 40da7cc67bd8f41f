import type { ReactNode } from "react";
import { Link } from "react-router";
import { Logo } from "~/ui/components/logo.tsx";
import { reportEvent } from "~/ui/lib/events.ts";
import { useShell, useSite } from "~/ui/shell.tsx";

const currentPath = () => (typeof location === "undefined" ? "" : location.pathname);

const navLinks = [
  { to: "/pricing", label: "Pricing" },
  { to: "/customers", label: "Customers" },
  { to: "/docs", label: "Docs" },
  { to: "/blog", label: "Blog" },
  { to: "/discord", label: "Discord" },
];

/** Links to what the operator has not set up (no customer stories, no community link) are left out. */
function useIsLinkShown(): (to: string) => boolean {
  const shell = useShell();
  return (to) => (to === "/customers" ? shell.content.customers !== null : to === "/discord" ? shell.site.discordUrl !== null : true);
}

export function SiteHeader() {
  const isShown = useIsLinkShown();
  return (
    <header className="sticky top-0 z-40 border-b border-zinc-900 bg-zinc-950/80 backdrop-blur">
      <div className="mx-auto flex h-14 max-w-6xl items-center gap-6 px-4">
        <Logo />
        {/* Small screens: a strip that scrolls sideways, faded at its end to say there is more. */}
        <nav
          aria-label="Site"
          className="flex min-w-0 flex-1 gap-1 overflow-x-auto text-sm [mask-image:linear-gradient(to_right,black_80%,transparent)] [scrollbar-width:none] sm:[mask-image:none]"
        >
          {navLinks
            .filter((link) => isShown(link.to))
            .map((link) => (
              <Link
                key={link.to}
                to={link.to}
                className="rounded-full px-3 py-1 whitespace-nowrap text-zinc-400 hover:bg-zinc-900 hover:text-zinc-100"
              >
                {link.label}
              </Link>
            ))}
        </nav>
        <StarCount />
        <Link
          to="/login"
          onClick={() => void reportEvent("clickLogin_navLink_header", { location: currentPath() })}
          className="shrink-0 rounded-md bg-zinc-100 px-3 py-1.5 text-sm font-medium text-zinc-900 hover:bg-white"
        >
          Start
        </Link>
      </div>
    </header>
  );
}

/** The code host's star count from content/site.json, linked to the repository; nothing when it is not set. */
function StarCount() {
  const { starCount, repoUrl } = useSite();
  if (!starCount) return null;
  const label = <span className="font-mono text-xs">★ {starCount}</span>;
  return repoUrl ? (
    <a
      href={repoUrl}
      rel="noopener noreferrer"
      className="hidden text-zinc-300 hover:text-zinc-100 sm:inline"
      aria-label={`${starCount} stars on the code host`}
    >
      {label}
    </a>
  ) : (
    <span className="hidden text-zinc-300 sm:inline">{label}</span>
  );
}

export function SiteFooter() {
  const isShown = useIsLinkShown();
  return (
    <footer className="border-t border-zinc-900">
      <div className="mx-auto grid max-w-6xl grid-cols-2 gap-8 px-4 py-10 text-sm sm:grid-cols-4">
        <FooterColumn
          title="Product"
          links={[
            ["/login", "Login"],
            ["/pricing", "Pricing"],
            ["/docs", "Docs"],
            ["/changelog", "Changelog"],
          ]}
        />
        <FooterColumn
          title="Company"
          links={(
            [
              ["/blog", "Blog"],
              ["/customers", "Customers"],
            ] as Array<[string, string]>
          ).filter(([to]) => isShown(to))}
        />
        <FooterColumn
          title="Help"
          links={(
            [
              ["/docs", "Docs"],
              ["/discord", "Discord"],
            ] as Array<[string, string]>
          ).filter(([to]) => isShown(to))}
        />
        <p className="col-span-2 text-zinc-400 sm:col-span-1">© {new Date().getUTCFullYear()} Tapscope</p>
      </div>
    </footer>
  );
}

function FooterColumn({ title, links }: { title: string; links: Array<[string, string]> }) {
  return (
    <div>
      <h3 className="font-medium text-zinc-300">{title}</h3>
      <ul className="mt-3 space-y-2">
        {links.map(([to, label]) => (
          <li key={to}>
            <Link
              to={to}
              onClick={to === "/login" ? () => void reportEvent("clickLogin_navLink_footer", { location: currentPath() }) : undefined}
              className="text-zinc-400 hover:text-zinc-200"
            >
              {label}
            </Link>
          </li>
        ))}
      </ul>
    </div>
  );
}

/** A public page: its title (ending in '| Tapscope'), the header, `main` at the given width, the footer. */
export function SitePage({ title, main, children }: { title: string; main: string; children: ReactNode }) {
  return (
    <div className="flex min-h-dvh flex-col">
      <title>{`${title} | Tapscope`}</title>
      <SiteHeader />
      <main className={`mx-auto w-full flex-1 px-4 ${main}`}>{children}</main>
      <SiteFooter />
    </div>
  );
}

/** A page with a heading and a few lines (the community page without a link). */
export function PlaceholderPage({ title, heading, children }: { title: string; heading: string; children?: ReactNode }) {
  return (
    <SitePage title={title} main="max-w-6xl py-20">
      <h1 className="text-3xl font-semibold tracking-tight text-zinc-100 sm:text-4xl">{heading}</h1>
      <div className="mt-4 max-w-2xl text-zinc-400">{children}</div>
    </SitePage>
  );
}
