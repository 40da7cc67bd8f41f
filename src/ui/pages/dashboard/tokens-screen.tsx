import { useMemo, useState } from "react";
import { api } from "~/ui/lib/api.ts";
import { useDashboard } from "~/ui/pages/dashboard/dashboard-state.ts";
import { DashboardIndex } from "~/ui/pages/dashboard/live-screen.tsx";
import { Screen } from "~/ui/pages/dashboard/screen.tsx";
import { type TokenCalls, TokenSection } from "~/ui/pages/dashboard/token-section.tsx";

export function TokensScreen() {
  const { namespace, org } = useDashboard();
  const [isAdvancedOpen, setIsAdvancedOpen] = useState(false);
  const namespaceId = namespace?.namespaceId;
  const orgId = org?.orgId;

  const namespaceCalls = useMemo<TokenCalls | null>(
    () =>
      namespaceId
        ? {
            list: async (signal) => (await api("ListNamespaceTokens", { namespaceId }, { signal })).tokens,
            generate: () => api("GenerateNamespaceToken", { namespaceId }),
            remove: async (tokenId) => void (await api("DeleteNamespaceToken", { tokenId })),
            rename: async (tokenId, label) => void (await api("RenameNamespaceToken", { tokenId, label })),
          }
        : null,
    [namespaceId],
  );
  const orgCalls = useMemo<TokenCalls | null>(
    () =>
      orgId
        ? {
            list: async (signal) => (await api("ListOrgTokens", { orgId }, { signal })).tokens,
            generate: () => api("GenerateOrgToken", { orgId }),
            remove: async (tokenId) => void (await api("DeleteOrgToken", { tokenId })),
            rename: async (tokenId, label) => void (await api("RenameOrgToken", { tokenId, label })),
          }
        : null,
    [orgId],
  );

  if (!namespaceCalls || !orgCalls || !namespace) return <DashboardIndex />;
  return (
    <Screen
      title="Tokens"
      description={
        <>
          Tracer tokens let <code className="font-mono text-zinc-300">tapscope run</code> send requests to{" "}
          <span className="text-zinc-200">{namespace.name}</span>. Export one as{" "}
          <code className="font-mono text-zinc-300">TAPSCOPE_TOKEN</code>.
        </>
      }
    >
      <TokenSection key={namespace.namespaceId} title="Namespace tokens" scope="namespace" calls={namespaceCalls} />
      <div>
        <button
          type="button"
          aria-expanded={isAdvancedOpen}
          onClick={() => setIsAdvancedOpen((open) => !open)}
          className="flex items-center gap-1.5 text-sm text-zinc-400 hover:text-zinc-100"
        >
          <span className={`inline-block transition-transform ${isAdvancedOpen ? "rotate-90" : ""}`} aria-hidden="true">
            ›
          </span>
          Show advanced settings
        </button>
        {isAdvancedOpen ? (
          <div className="mt-4">
            <p className="mb-4 text-sm text-zinc-500">Organization worker tokens work for every namespace of the organization.</p>
            <TokenSection title="Organization worker tokens" scope="org" calls={orgCalls} />
          </div>
        ) : null}
      </div>
    </Screen>
  );
}
