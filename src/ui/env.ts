import type { DocIndexEntry, DocPage } from "~/lib/docs.ts";
import type { Self } from "~/lib/protocol/api/auth.ts";
import { type ChangelogEntry, type CustomerStory, emptySite, type SiteInfo } from "~/lib/site-content.ts";
import { errorTags, reportEvent } from "~/ui/lib/events.ts";
import { type PageShell, SHELL_GLOBAL } from "~/ui/shell.tsx";

/**
 * What loaders may ask for. On the server the request context passed to handler.query() implements it
 * with services; in the browser (client navigations) it falls back to /api calls.
 */
export type PageEnv = {
  getSelf: (request: Request) => Promise<Self | null>;
  /** The docs' index and the page `slug` (null when there is no such page). */
  getDocs: (request: Request, slug: string) => Promise<{ index: DocIndexEntry[]; page: DocPage | null }>;
  /** The site's customer stories or changelog entries (content/), [] when the build has none. */
  getContent: <K extends keyof ContentKinds>(request: Request, kind: K) => Promise<ContentKinds[K]>;
  /** The site's links and badges (content/site.json). */
  getSite: () => SiteInfo;
};

export type ContentKinds = { customers: CustomerStory[]; changelog: ChangelogEntry[] };

export function pageEnv(context: unknown): PageEnv {
  const candidate = context as Partial<PageEnv> | undefined;
  if (
    candidate &&
    typeof candidate.getSelf === "function" &&
    typeof candidate.getDocs === "function" &&
    typeof candidate.getContent === "function"
  )
    return candidate as PageEnv;
  return browserEnv;
}

async function fetchJson<T>(url: string | undefined, signal: AbortSignal): Promise<T | null> {
  if (!url) return null;
  const response = await fetch(url, { signal });
  if (response.status !== 200) throw new Error(`got unexpected status code ${response.status}`);
  return (await response.json()) as T;
}

const browserEnv: PageEnv = {
  getSite() {
    return (globalThis as { [SHELL_GLOBAL]?: PageShell })[SHELL_GLOBAL]?.site ?? emptySite;
  },
  async getContent(request, kind) {
    const urls = (globalThis as { [SHELL_GLOBAL]?: PageShell })[SHELL_GLOBAL]?.content;
    return ((await fetchJson(urls?.[kind] ?? undefined, request.signal)) ?? []) as never;
  },
  async getDocs(request, slug) {
    const docs = (globalThis as { [SHELL_GLOBAL]?: PageShell })[SHELL_GLOBAL]?.docs;
    const index = (await fetchJson<DocIndexEntry[]>(docs?.index ?? undefined, request.signal)) ?? [];
    const url = docs && Object.hasOwn(docs.pages, slug) ? docs.pages[slug] : undefined;
    return { index, page: await fetchJson<DocPage>(url, request.signal) };
  },
  async getSelf(request) {
    try {
      const response = await fetch("/api/GetSelf", { credentials: "same-origin", signal: request.signal });
      if (response.status !== 200) return null;
      return (await response.json()) as Self;
    } catch (err) {
      if (!request.signal.aborted) void reportEvent("GetSelfFailure", errorTags(err));
      return null;
    }
  },
};
