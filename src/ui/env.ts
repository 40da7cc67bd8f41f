import type { Self } from "~/lib/protocol/api/auth.ts";
import { errorTags, reportEvent } from "~/ui/lib/events.ts";

/**
 * What loaders may ask for. On the server the request context passed to handler.query() implements it
 * with services; in the browser (client navigations) it falls back to /api calls.
 */
export type PageEnv = {
  getSelf: (request: Request) => Promise<Self | null>;
};

export function pageEnv(context: unknown): PageEnv {
  const candidate = context as Partial<PageEnv> | undefined;
  if (candidate && typeof candidate.getSelf === "function") return candidate as PageEnv;
  return browserEnv;
}

const browserEnv: PageEnv = {
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
