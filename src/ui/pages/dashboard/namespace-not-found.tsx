import { Link } from "react-router";
import { useDashboard } from "~/ui/pages/dashboard/dashboard-state.ts";

/** A dashboard URL naming a namespace the user has none of: said so, with the ones they have. */
export function NamespaceNotFound({ name }: { name: string }) {
  const { namespaces } = useDashboard();
  return (
    <div className="mx-auto w-full max-w-2xl px-4 py-16 sm:px-6" role="alert" aria-labelledby="missing-namespace">
      <title>Namespace not found | Tapscope</title>
      <h1 id="missing-namespace" className="text-xl font-semibold tracking-tight text-zinc-100">
        There is no namespace named “{name}”
      </h1>
      <p className="mt-2 text-sm text-zinc-400">
        It may have been deleted or renamed, the address may have a typo, or it belongs to an organization you are not a member of.
      </p>
      {namespaces && namespaces.length > 0 ? (
        <>
          <h2 className="mt-8 text-sm font-medium text-zinc-300">Your namespaces</h2>
          <ul className="mt-2 divide-y divide-zinc-800 overflow-hidden rounded-lg border border-zinc-800">
            {namespaces.map((ns) => (
              <li key={ns.namespaceId}>
                <Link
                  to={`/dashboard/${encodeURIComponent(ns.name)}/live`}
                  className="block px-4 py-2.5 text-sm text-zinc-200 hover:bg-zinc-900"
                >
                  {ns.name}
                </Link>
              </li>
            ))}
          </ul>
        </>
      ) : null}
    </div>
  );
}
