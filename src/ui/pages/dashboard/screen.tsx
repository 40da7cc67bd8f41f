import type { ReactNode } from "react";

export function Screen({ title, description, children }: { title: string; description?: ReactNode; children?: ReactNode }) {
  return (
    <div className="mx-auto w-full max-w-4xl px-5 pt-16 pb-10 sm:px-10 md:pt-10">
      <title>{`${title} | Tapscope`}</title>
      <h1 className="text-xl font-semibold tracking-tight text-zinc-100">{title}</h1>
      {description ? <p className="mt-1 text-sm text-zinc-400">{description}</p> : null}
      <div className="mt-8 space-y-10">{children}</div>
    </div>
  );
}

export function SectionTitle({ title, count, action }: { title: string; count?: number; action?: ReactNode }) {
  return (
    <div className="mb-3 flex items-center justify-between gap-4">
      <h2 className="text-sm font-medium text-zinc-200">
        {title}
        {count === undefined ? null : <span className="ml-2 rounded-full bg-zinc-800 px-2 py-0.5 text-xs text-zinc-400">{count}</span>}
      </h2>
      {action}
    </div>
  );
}
