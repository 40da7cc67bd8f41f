import { Link } from "react-router";

export function LogoMark({ className = "size-6" }: { className?: string }) {
  return (
    <svg className={className} viewBox="0 0 32 32" fill="none" aria-hidden="true">
      <rect x="1" y="1" width="30" height="30" rx="8" className="fill-zinc-100" />
      <path d="M8 11h16M16 11v12" stroke="#09090b" strokeWidth="3" strokeLinecap="round" />
      <circle cx="23" cy="21" r="2.5" fill="#10b981" />
    </svg>
  );
}

export function Logo({ to = "/" }: { to?: string }) {
  return (
    <Link to={to} className="flex items-center gap-2 font-semibold tracking-tight text-zinc-100">
      <LogoMark />
      <span>Tapscope</span>
    </Link>
  );
}
