import { createContext, useCallback, useContext, useEffect, useMemo, useState } from "react";
import { useLocation, useNavigate, useParams } from "react-router";
import type { Self } from "~/lib/protocol/api/auth.ts";
import type { Namespace, Org } from "~/lib/protocol/api/orgs.ts";
import type { Invitation } from "~/lib/protocol/api/users.ts";
import { ApiError, alertError, api, isAbortError } from "~/ui/lib/api.ts";
import { readLocal, storageKeys, writeLocal } from "~/ui/lib/storage.ts";

export const REQUESTS_LINK_WINDOW_MS = 604_800_000;
export const NAMESPACE_FORBIDDEN_TEXT = "error: status 403: forbidden: you are not allowed to create a namespace";

/** A namespace of any of the user's orgs, with the org it belongs to. */
export type DashboardNamespace = Namespace & { orgId: string };

export type DashboardState = {
  self: Self;
  /** The user's orgs (null while loading). */
  orgs: Org[] | null;
  /** The current namespace's org. */
  org: Org | null;
  /** Every namespace the user belongs to, across their orgs (null while loading; empty for a new user with invitations only). */
  namespaces: DashboardNamespace[] | null;
  namespace: DashboardNamespace | null;
  /** The namespace name in the URL when the user has no namespace of that name (a typo, deleted, not theirs). */
  missingNamespace: string | null;
  /** Invitations addressed to the user, waiting for their answer. */
  invitations: Invitation[];
  selectNamespace: (namespace: DashboardNamespace) => void;
  createNamespace: () => Promise<void>;
  /** Loads orgs, namespaces and invitations again (after joining, leaving or deleting a namespace). */
  reload: () => Promise<void>;
  /** Reads the orgs again (what they have seen: a store for the Requests link); the new list. */
  refreshOrgs: () => Promise<Org[]>;
  acceptInvitation: (invitation: Invitation) => Promise<void>;
  declineInvitation: (invitation: Invitation) => Promise<void>;
  /** A new user who was invited but would rather have their own: onboarding as usual. */
  startOwnNamespace: () => Promise<void>;
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
  const screen = /^\/dashboard\/[^/]+\/(live|requests|endpoints|tokens|users)(?:\/|$)/.exec(currentPath)?.[1] ?? "live";
  return `/dashboard/${encodeURIComponent(name)}/${screen}`;
}

type Loaded = { orgs: Org[]; namespaces: DashboardNamespace[]; invitations: Invitation[] };

/** Every org's namespaces, the org named on each (orgs without one are skipped). */
async function loadNamespaces(orgs: Org[], signal?: AbortSignal): Promise<DashboardNamespace[]> {
  const lists = await Promise.all(orgs.map((org) => api("ListNamespaces", { orgId: org.orgId }, { signal })));
  return lists.flatMap((list, i) => list.namespaces.map((ns) => ({ ...ns, orgId: orgs[i]?.orgId ?? "" })));
}

/**
 * App start: load orgs and the invitations waiting for the user (onboard when there are neither), then every org's
 * namespaces; the current namespace comes from the URL, else the last stored one, else the first.
 */
export function useDashboardState(self: Self): DashboardState {
  const [loaded, setLoaded] = useState<Loaded | null>(null);
  const [bootError, setBootError] = useState<unknown>(null);
  const { namespaceName } = useParams();
  const location = useLocation();
  const navigate = useNavigate();

  const load = useCallback(
    async (signal?: AbortSignal): Promise<Loaded> => {
      const [{ orgs }, { invitations }] = await Promise.all([
        api("ListOrgs", {}, { signal }),
        // The dashboard works without them: an invitation is also announced by mail.
        api("ListMyInvitations", {}, { signal }).catch((err: unknown) => {
          if (isAbortError(err)) throw err;
          return { invitations: [] };
        }),
      ]);
      if (orgs.length === 0) {
        // Invited before having anything of their own: the invitations come first, onboarding is one click away.
        if (invitations.length > 0) return { orgs: [], namespaces: [], invitations };
        const onboarded = await api("OnboardNewUser", { namespaceName: namespaceNameFromEmail(self.email) }, { signal });
        // A new org has not seen a worker yet.
        const org: Org = { orgId: onboarded.org.orgId, name: self.email, lastSeenWorkerTime: null };
        return { orgs: [org], namespaces: [{ ...onboarded.namespace, orgId: org.orgId }], invitations };
      }
      const namespaces = await loadNamespaces(orgs, signal);
      if (namespaces.length === 0) throw new Error("the org has no namespaces");
      return { orgs, namespaces, invitations };
    },
    [self.email],
  );

  useEffect(() => {
    const controller = new AbortController();
    load(controller.signal)
      .then(setLoaded)
      .catch((err) => {
        if (!isAbortError(err)) setBootError(err);
      });
    return () => controller.abort();
  }, [load]);

  const namespaces = loaded?.namespaces ?? null;
  const namespace = useMemo(() => {
    if (!namespaces) return null;
    const storedId = typeof window === "undefined" ? null : readLocal(storageKeys.lastNamespaceId);
    if (namespaceName) {
      // Names are unique within an org only: the last one used wins among namesakes. A name the user has no
      // namespace of is not quietly swapped for another one: the screen says it does not exist (missingNamespace).
      const named = namespaces.filter((ns) => ns.name === namespaceName);
      return named.find((ns) => ns.namespaceId === storedId) ?? named[0] ?? null;
    }
    return namespaces.find((ns) => ns.namespaceId === storedId) ?? namespaces[0] ?? null;
  }, [namespaces, namespaceName]);
  const missingNamespace = namespaces && namespaces.length > 0 && namespaceName && !namespace ? namespaceName : null;
  const org = useMemo(() => loaded?.orgs.find((o) => o.orgId === namespace?.orgId) ?? null, [loaded, namespace]);

  useEffect(() => {
    if (!namespace) return;
    writeLocal(storageKeys.lastNamespaceId, namespace.namespaceId);
    const isBilling = location.pathname.startsWith("/dashboard/billing");
    if (!isBilling && namespace.name !== namespaceName) {
      navigate(namespacePath(namespace.name, location.pathname), { replace: true });
    }
  }, [namespace, namespaceName, location.pathname, navigate]);

  const selectNamespace = useCallback(
    (next: DashboardNamespace) => {
      writeLocal(storageKeys.lastNamespaceId, next.namespaceId);
      navigate(namespacePath(next.name, location.pathname));
    },
    [navigate, location.pathname],
  );

  const reload = useCallback(async () => {
    setLoaded(await load());
  }, [load]);

  const refreshOrgs = useCallback(async () => {
    const { orgs } = await api("ListOrgs", {});
    setLoaded((current) => (current ? { ...current, orgs } : current));
    return orgs;
  }, []);

  const createNamespace = useCallback(async () => {
    if (!org || !loaded) return;
    const name = window.prompt("Name of the new namespace")?.trim();
    if (!name) return;
    try {
      const { namespaceId } = await api("CreateNamespace", { orgId: org.orgId, name });
      const { namespaces: list } = await api("ListNamespaces", { orgId: org.orgId });
      const created = list.find((ns) => ns.namespaceId === namespaceId);
      if (!created) throw new Error(`created namespace ${namespaceId} is missing from the namespace list`);
      const others = loaded.namespaces.filter((ns) => ns.orgId !== org.orgId);
      setLoaded({ ...loaded, namespaces: [...others, ...list.map((ns) => ({ ...ns, orgId: org.orgId }))] });
      selectNamespace({ ...created, orgId: org.orgId });
    } catch (err) {
      if (err instanceof ApiError && err.status === 403) {
        window.alert(NAMESPACE_FORBIDDEN_TEXT);
        return;
      }
      if (isAbortError(err)) return;
      alertError("Could not create the namespace", err);
    }
  }, [org, loaded, selectNamespace]);

  const acceptInvitation = useCallback(
    async (invitation: Invitation) => {
      try {
        const joined = await api("AcceptInvitation", { invitationId: invitation.invitationId });
        await reload();
        selectNamespace({ ...joined.namespace, orgId: joined.org.orgId });
      } catch (err) {
        if (!isAbortError(err)) alertError("Could not accept the invitation", err);
        await reload().catch(() => {});
      }
    },
    [reload, selectNamespace],
  );

  const declineInvitation = useCallback(
    async (invitation: Invitation) => {
      try {
        await api("DeclineInvitation", { invitationId: invitation.invitationId });
      } catch (err) {
        if (!isAbortError(err)) alertError("Could not decline the invitation", err);
      }
      await reload().catch((err) => setBootError(err));
    },
    [reload],
  );

  const startOwnNamespace = useCallback(async () => {
    try {
      await api("OnboardNewUser", { namespaceName: namespaceNameFromEmail(self.email) });
      await reload();
    } catch (err) {
      if (!isAbortError(err)) alertError("Could not create your namespace", err);
    }
  }, [self.email, reload]);

  if (bootError) throw bootError;
  return {
    self,
    orgs: loaded?.orgs ?? null,
    org,
    namespaces,
    namespace,
    missingNamespace,
    invitations: loaded?.invitations ?? [],
    selectNamespace,
    createNamespace,
    reload,
    refreshOrgs,
    acceptInvitation,
    declineInvitation,
    startOwnNamespace,
  };
}
