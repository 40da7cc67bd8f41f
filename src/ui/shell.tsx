import { createContext, type ReactNode, useContext } from "react";
import { emptySite, type SiteInfo } from "~/lib/site-content.ts";

/** What the server tells every page: which sign-in options exist, where to get help, which build runs. */
export type PublicConfig = {
  hasGoogle: boolean;
  hasGithub: boolean;
  supportEmail: string;
  commitHash: string;
  /** Where users reach this server (PUBLIC_URL): the docs' commands name it. */
  publicUrl: string;
};

/** What the server hands every page besides route data: asset URLs and public configuration. */
export type PageShell = {
  /** `preload`: the chunks of the page's area, fetched beside the entry rather than after it. */
  assets: { css: string[]; js: string | null; preload: string[] };
  config: PublicConfig;
  /** URLs of the rendered documentation (content-hashed JSON): the sidebar's index and each page by slug. */
  docs: { index: string | null; pages: Record<string, string> };
  /** The site's links and badges (content/site.json) and the URLs of its stories and changelog. */
  site: SiteInfo;
  content: { customers: string | null; changelog: string | null };
};

export const SHELL_GLOBAL = "__TAPSCOPE_SHELL__";
/** Set on window once the page has hydrated (its route's chunk loaded, event handlers attached): what tests wait for. */
export const HYDRATED_GLOBAL = "__TAPSCOPE_HYDRATED__";
/** `window.__TAPSCOPE_VERSION__.commitHash`: the build info on a window-level object, for code outside React too. */
export const VERSION_GLOBAL = "__TAPSCOPE_VERSION__";

export const defaultShell: PageShell = {
  assets: { css: [], js: null, preload: [] },
  config: {
    hasGoogle: false,
    hasGithub: false,
    supportEmail: "support@tapscope.dev",
    commitHash: "dev",
    publicUrl: "http://localhost:4000",
  },
  docs: { index: null, pages: {} },
  site: emptySite,
  content: { customers: null, changelog: null },
};

const ShellContext = createContext<PageShell>(defaultShell);

export function ShellProvider({ shell, children }: { shell: PageShell; children: ReactNode }) {
  return <ShellContext.Provider value={shell}>{children}</ShellContext.Provider>;
}

export function useShell(): PageShell {
  return useContext(ShellContext);
}

export function useSite(): SiteInfo {
  return useContext(ShellContext).site;
}

export function usePublicConfig(): PublicConfig {
  return useContext(ShellContext).config;
}
