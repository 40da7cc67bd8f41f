import { parseCookies } from "~/lib/cookies.ts";
import type { DocIndexEntry, DocPage } from "~/lib/docs.ts";
import { emptySite } from "~/lib/site-content.ts";
import { authenticate } from "~/services/auth/authenticate.ts";
import { SESSION_COOKIE } from "~/services/auth/session-token.ts";
import type { ServiceContext } from "~/services/context.ts";
import type { PageEnv } from "~/ui/env.ts";
import type { AssetSource } from "./assets.ts";

/**
 * Loaders' server side: the session is checked with the auth service, never by calling our own HTTP API; the docs
 * are read from the built assets (content-hashed, so each file is parsed once).
 */
export function createServerEnv(ctx: ServiceContext, assets: AssetSource): PageEnv {
  const parsed = new Map<string, unknown>();
  async function readJson<T>(name: string | undefined): Promise<T | null> {
    if (!name) return null;
    if (parsed.has(name)) return parsed.get(name) as T;
    const file = assets.get(name);
    if (!file) return null;
    const value = (await file.json()) as T;
    parsed.set(name, value);
    return value;
  }
  return {
    getSite() {
      return assets.manifest()?.content?.site ?? emptySite;
    },
    async getContent(_request, kind) {
      const content = assets.manifest()?.content;
      return ((await readJson(content?.[kind] ?? undefined)) ?? []) as never;
    },
    async getDocs(_request, slug) {
      const docs = assets.manifest()?.docs;
      const index = (await readJson<DocIndexEntry[]>(docs?.index)) ?? [];
      const page = Object.hasOwn(docs?.pages ?? {}, slug) ? await readJson<DocPage>(docs?.pages[slug]) : null;
      return { index, page };
    },
    async getSelf(request) {
      const sessionCookie = parseCookies(request.headers.get("cookie"))[SESSION_COOKIE];
      if (!sessionCookie) return null;
      const principal = await authenticate({ ctx, sessionCookie });
      return principal?.kind === "user" ? { email: principal.email, userId: principal.userId, isLoggedIn: true } : null;
    },
  };
}
