import { createContext, useCallback, useContext, useEffect, useMemo, useState } from "react";
import { useLocation, useNavigate, useParams } from "react-router";
import type { Self } from "~/lib/protocol/api/auth.ts";
import type { Namespace, Org } from "~/lib/protocol/api/orgs.ts";
import { ApiError, alertError, api, isAbortError } from "~/ui/lib/api.ts";
import { readLocal, storageKeys, writeLocal } from "~/ui/lib/storage.ts";

export const REQUESTS_LINK_WINDOW_MS = 604_800_000;
export const NAMESPACE_FORBIDDEN_TEXT = "error: status 403: forbidden: you are not allowed to create a namespace";

export type DashboardState = {
  self: Self;
  org: Org | null;
  namespaces: Namespace[] | null;
  namespace: Namespace | null;
  selectNamespace: (namespace: Namespace) => void;
  createNamespace: () => Promise<void>;
};

export const DashboardContext = createContext<DashboardState | null>(null);

export function useDashboard(): DashboardState {
  const state = useContext(DashboardContext);
  if (!state) throw new Error("useDashboard outside the dashboard");
  return state;
}

/** The first namespace's name for a new user: the e-mail's local part, made URL-friendly. */
export function namespaceNameFromEmail(email: string): string {
  const local = email.split("@")[0] ?? "";
  const cleaned = local
    .toLowerCase()
    .replace(/[^a-z0-9-]+/g, "-")
    .replace(/^-+|-+$/g, "");
  return cleaned || "default";
}

export function isWorkerRecent(lastSeenWorkerTime: Org["lastSeenWorkerTime"] | undefined, now = Date.now()): boolean {
  if (lastSeenWorkerTime === null || lastSeenWorkerTime === undefined) return false;
  const time = new Date(lastSeenWorkerTime).getTime();
  return Number.isFinite(time) && now - time <= REQUESTS_LINK_WINDOW_MS;
}

/** The dashboard path for a namespace, keeping the current screen (live, tokens, ...) when switching. */
export function namespacePath(name: string, currentPath: string): string {
  const screen = /^\/dashboard\/[^/]+\/(live|requests|tokens|users)(?:\/|$)/.exec(currentPath)?.[1] ?? "live";
  return `/dashboard/${encodeURIComponent(name)}/${screen}`;
}

/**
 * App start: load orgs (onboard when there are none), then the first org's namespaces;
 * the current namespace comes from the URL, else the last stored one, else the first.
 */
export function useDashboardState(self: Self): DashboardState {
  const [org, setOrg] = useState<Org | null>(null);
  const [namespaces, setNamespaces] = useState<Namespace[] | null>(null);
  const [bootError, setBootError] = useState<unknown>(null);
  const { namespaceName } = useParams();
  const location = useLocation();
  const navigate = useNavigate();

  useEffect(() => {
    const controller = new AbortController();
    const { signal } = controller;
    (async () => {
      const { orgs } = await api("ListOrgs", {}, { signal });
      const first = orgs[0];
      if (!first) {
        const onboarded = await api("OnboardNewUser", { namespaceName: namespaceNameFromEmail(self.email) }, { signal });
        // A new org has not seen a worker yet.
        setOrg({ ...onboarded.org, lastSeenWorkerTime: null });
        setNamespaces([onboarded.namespace]);
        return;
      }
      const { namespaces: list } = await api("ListNamespaces", { orgId: first.orgId }, { signal });
      if (list.length === 0) throw new Error("the org has no namespaces");
      setOrg(first);
      setNamespaces(list);
    })().catch((err) => {
      if (!isAbortError(err)) setBootError(err);
    });
    return () => controller.abort();
  }, [self.email]);

  const namespace = useMemo(() => {
    if (!namespaces) return null;
    if (namespaceName) {
      const fromUrl = namespaces.find((ns) => ns.name === namespaceName);
      if (fromUrl) return fromUrl;
    }
    const storedId = typeof window === "undefined" ? null : readLocal(storageKeys.lastNamespaceId);
    return namespaces.find((ns) => ns.namespaceId === storedId) ?? namespaces[0] ?? null;
  }, [namespaces, namespaceName]);

  useEffect(() => {
    if (!namespace) return;
    writeLocal(storageKeys.lastNamespaceId, namespace.namespaceId);
    const isBilling = location.pathname.startsWith("/dashboard/billing");
    if (!isBilling && namespace.name !== namespaceName) {
      navigate(namespacePath(namespace.name, location.pathname), { replace: true });
    }
  }, [namespace, namespaceName, location.pathname, navigate]);

  const selectNamespace = useCallback(
    (next: Namespace) => {
      writeLocal(storageKeys.lastNamespaceId, next.namespaceId);
      navigate(namespacePath(next.name, location.pathname));
    },
    [navigate, location.pathname],
  );

  const createNamespace = useCallback(async () => {
    if (!org) return;
    const name = window.prompt("Name of the new namespace")?.trim();
    if (!name) return;
    try {
      const { namespaceId } = await api("CreateNamespace", { orgId: org.orgId, name });
      const { namespaces: list } = await api("ListNamespaces", { orgId: org.orgId });
      const created = list.find((ns) => ns.namespaceId === namespaceId);
      if (!created) throw new Error(`created namespace ${namespaceId} is missing from the namespace list`);
      setNamespaces(list);
      selectNamespace(created);
    } catch (err) {
      if (err instanceof ApiError && err.status === 403) {
        window.alert(NAMESPACE_FORBIDDEN_TEXT);
        return;
      }
      if (isAbortError(err)) return;
      alertError("Could not create the namespace", err);
    }
  }, [org, selectNamespace]);

  if (bootError) throw bootError;
  return { self, org, namespaces, namespace, selectNamespace, createNamespace };
}
