import type { ReactNode } from "react";
import { NavLink } from "react-router";
import { LogoMark } from "~/ui/components/logo.tsx";
import { isWorkerRecent, useDashboard } from "~/ui/pages/dashboard/dashboard-state.ts";
import { NamespaceSwitcher } from "~/ui/pages/dashboard/namespace-switcher.tsx";
import { usePublicConfig, useSite } from "~/ui/shell.tsx";

const linkClass = ({ isActive }: { isActive: boolean }) =>
  `flex items-center gap-2 rounded-md px-2.5 py-1.5 text-sm ${isActive ? "bg-zinc-800 text-zinc-100" : "text-zinc-400 hover:bg-zinc-900 hover:text-zinc-100"}`;

export function SideNav({ onHide }: { onHide: () => void }) {
  const { self, org, orgs, namespaces, namespace, selectNamespace, createNamespace, startOwnNamespace } = useDashboard();
  const { supportEmail } = usePublicConfig();
  const { discordUrl } = useSite();
  const base = namespace ? `/dashboard/${encodeURIComponent(namespace.name)}` : null;
  return (
    <nav aria-label="Dashboard" className="flex w-60 shrink-0 flex-col gap-4 border-r border-zinc-900 bg-zinc-950 p-3">
      <div className="flex items-center justify-between px-1">
        <a href="/" className="flex items-center gap-2 font-semibold tracking-tight text-zinc-100">
          <LogoMark className="size-5" /> Tapscope
        </a>
        <button
          type="button"
          onClick={onHide}
          aria-label="Hide navigation"
          className="rounded p-1 text-zinc-500 hover:bg-zinc-900 hover:text-zinc-200"
        >
          <PanelIcon />
        </button>
      </div>
      <NamespaceSwitcher
        namespaces={namespaces}
        orgs={orgs}
        current={namespace}
        onSelect={selectNamespace}
        onCreate={() => void (org ? createNamespace() : startOwnNamespace())}
      />
      {base ? (
        <div className="flex flex-col gap-0.5">
          <NavLink to={`${base}/live`} className={linkClass}>
            <Dot /> Live
          </NavLink>
          {isWorkerRecent(org?.lastSeenWorkerTime) ? (
            <NavLink to={`${base}/requests`} className={linkClass}>
              <Dot /> Requests
            </NavLink>
          ) : null}
          {isWorkerRecent(org?.lastSeenWorkerTime) ? (
            <NavLink to={`${base}/endpoints`} className={linkClass}>
              <Dot /> Endpoints
            </NavLink>
          ) : null}
          <NavLink to={`${base}/tokens`} className={linkClass}>
            <Dot /> Tokens
          </NavLink>
          <NavLink to={`${base}/users`} className={linkClass}>
            <Dot /> Users
          </NavLink>
          <NavLink to={`${base}/export`} className={linkClass}>
            <Dot /> Export
          </NavLink>
        </div>
      ) : null}
      <div className="mt-auto flex flex-col gap-0.5 border-t border-zinc-900 pt-3">
        {discordUrl ? <ExternalLink href="/discord">Community chat</ExternalLink> : null}
        <ExternalLink href="/docs">Docs</ExternalLink>
        <ExternalLink href={`mailto:${supportEmail}`}>Support</ExternalLink>
        <NavLink to="/dashboard/billing" className={linkClass}>
          Billing
        </NavLink>
        <a href="/api/LogOut" className="rounded-md px-2.5 py-1.5 text-sm text-zinc-400 hover:bg-zinc-900 hover:text-zinc-100">
          Log out
        </a>
        <p className="truncate px-2.5 pt-2 text-xs text-zinc-600" title={self.email}>
          {self.email}
        </p>
      </div>
    </nav>
  );
}

function ExternalLink({ href, children }: { href: string; children: ReactNode }) {
  return (
    <a href={href} className="rounded-md px-2.5 py-1.5 text-sm text-zinc-400 hover:bg-zinc-900 hover:text-zinc-100">
      {children}
    </a>
  );
}

function Dot() {
  return <span className="size-1.5 rounded-full bg-current opacity-60" aria-hidden="true" />;
}

export function PanelIcon() {
  return (
    <svg viewBox="0 0 20 20" className="size-4" fill="none" stroke="currentColor" strokeWidth="1.5" aria-hidden="true">
      <rect x="2.5" y="3.5" width="15" height="13" rx="2" />
      <path d="M7.5 3.5v13" />
    </svg>
  );
}
