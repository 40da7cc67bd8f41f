import { createContext, type ReactNode, useContext } from "react";

/** What the server tells every page: which sign-in options exist, where to get help, which build runs. */
export type PublicConfig = {
  hasGoogle: boolean;
  hasGithub: boolean;
  supportEmail: string;
  commitHash: string;
};

/** What the server hands every page besides route data: asset URLs and public configuration. */
export type PageShell = {
  assets: { css: string[]; js: string | null };
  config: PublicConfig;
};

export const SHELL_GLOBAL = "__TAPSCOPE_SHELL__";
/** `window.__TAPSCOPE_VERSION__.commitHash`: the build info on a window-level object, for code outside React too. */
export const VERSION_GLOBAL = "__TAPSCOPE_VERSION__";

export const defaultShell: PageShell = {
  assets: { css: [], js: null },
  config: { hasGoogle: false, hasGithub: false, supportEmail: "support@tapscope.dev", commitHash: "dev" },
};

const ShellContext = createContext<PageShell>(defaultShell);

export function ShellProvider({ shell, children }: { shell: PageShell; children: ReactNode }) {
  return <ShellContext.Provider value={shell}>{children}</ShellContext.Provider>;
}

export function useShell(): PageShell {
  return useContext(ShellContext);
}

export function usePublicConfig(): PublicConfig {
  return useContext(ShellContext).config;
}
