import { useEffect, useRef, useState } from "react";
import type { Org } from "~/lib/protocol/api/orgs.ts";
import { Spinner } from "~/ui/components/spinner.tsx";
import type { DashboardNamespace } from "~/ui/pages/dashboard/dashboard-state.ts";

/**
 * Dropdown of the user's namespaces with a create action (in the current one's org); an outside click closes it. A
 * member of several orgs sees each org's namespaces under its name.
 */
export function NamespaceSwitcher({
  namespaces,
  orgs = null,
  current,
  onSelect,
  onCreate,
}: {
  namespaces: DashboardNamespace[] | null;
  orgs?: Org[] | null;
  current: DashboardNamespace | null;
  onSelect: (namespace: DashboardNamespace) => void;
  onCreate: () => void;
}) {
  const [isOpen, setIsOpen] = useState(false);
  const rootRef = useRef<HTMLDivElement>(null);

  useEffect(() => {
    if (!isOpen) return;
    const onPointerDown = (event: MouseEvent) => {
      if (rootRef.current && !rootRef.current.contains(event.target as Node)) setIsOpen(false);
    };
    const onKey = (event: KeyboardEvent) => {
      if (event.key === "Escape") setIsOpen(false);
    };
    document.addEventListener("mousedown", onPointerDown);
    document.addEventListener("keydown", onKey);
    return () => {
      document.removeEventListener("mousedown", onPointerDown);
      document.removeEventListener("keydown", onKey);
    };
  }, [isOpen]);

  if (!namespaces) {
    return (
      <div className="flex h-9 items-center gap-2 rounded-md border border-zinc-800 px-3 text-sm text-zinc-500">
        <Spinner className="size-3.5" /> Loading namespaces…
      </div>
    );
  }

  // One org: a plain list. Several: each org's namespaces under its name.
  const orgIds = [...new Set(namespaces.map((ns) => ns.orgId))];
  const groups = orgIds.map((orgId) => ({
    orgId,
    label: orgIds.length > 1 ? (orgs?.find((o) => o.orgId === orgId)?.name ?? "Organization") : null,
    namespaces: namespaces.filter((ns) => ns.orgId === orgId),
  }));

  return (
    <div ref={rootRef} className="relative">
      <button
        type="button"
        aria-haspopup="menu"
        aria-expanded={isOpen}
        aria-label="Switch namespace"
        onClick={() => setIsOpen((open) => !open)}
        className="flex h-9 w-full items-center justify-between gap-2 rounded-md border border-zinc-800 bg-zinc-900 px-3 text-left text-sm text-zinc-100 hover:bg-zinc-800"
      >
        <span className="truncate">{current?.name ?? "Select namespace"}</span>
        <svg viewBox="0 0 20 20" className="size-4 shrink-0 text-zinc-500" fill="currentColor" aria-hidden="true">
          <path d="M10 3l4 5H6l4-5zm0 14l-4-5h8l-4 5z" />
        </svg>
      </button>
      {isOpen ? (
        <div
          role="menu"
          className="absolute inset-x-0 top-10 z-30 overflow-hidden rounded-md border border-zinc-800 bg-zinc-900 py-1 shadow-xl"
        >
          <div className="max-h-64 overflow-y-auto">
            {groups.map((group) => (
              // biome-ignore lint/a11y/useSemanticElements: a group of menu items is role=group inside role=menu, not a fieldset
              <div key={group.orgId} role="group" aria-label={group.label ?? undefined}>
                {group.label ? (
                  <div className="truncate px-3 pt-2 pb-1 text-[10px] font-medium text-zinc-500 uppercase">{group.label}</div>
                ) : null}
                {group.namespaces.map((ns) => (
                  <button
                    key={ns.namespaceId}
                    type="button"
                    role="menuitem"
                    onClick={() => {
                      setIsOpen(false);
                      onSelect(ns);
                    }}
                    className={`flex w-full items-center justify-between px-3 py-1.5 text-left text-sm hover:bg-zinc-800 ${ns.namespaceId === current?.namespaceId ? "text-zinc-100" : "text-zinc-400"}`}
                  >
                    <span className="truncate">{ns.name}</span>
                    {ns.namespaceId === current?.namespaceId ? <span aria-hidden="true">✓</span> : null}
                  </button>
                ))}
              </div>
            ))}
          </div>
          <div className="my-1 h-px bg-zinc-800" />
          <button
            type="button"
            role="menuitem"
            onClick={() => {
              setIsOpen(false);
              onCreate();
            }}
            className="w-full px-3 py-1.5 text-left text-sm text-zinc-300 hover:bg-zinc-800"
          >
            + Create namespace
          </button>
        </div>
      ) : null}
    </div>
  );
}
