/**
 * What an operator edits in content/ (rendered at build time by scripts/docs/render-content.ts): the site's links
 * and badges, customer stories and the changelog. Everything shipped there is example content and says so.
 */
export type SiteInfo = {
  /** Shown in the navigation as a star count (e.g. "2.6K"); hidden when null. */
  starCount: string | null;
  repoUrl: string | null;
  discordUrl: string | null;
  socialUrl: string | null;
  /** The hero's 'Backed by' label; hidden when null. */
  backedBy: string | null;
};

export type CustomerStory = {
  slug: string;
  company: string;
  title: string;
  website: string;
  industry: string;
  description: string;
  quote: string | null;
  person: string | null;
  role: string | null;
  /** Example content shipped with Tapscope: labelled as such wherever it is shown. */
  isExample: boolean;
  html: string;
};

export type ChangelogEntry = { version: string; date: string; html: string };

export type SiteContent = { site: SiteInfo; customers: CustomerStory[]; changelog: ChangelogEntry[] };

/**
 * Asset names (below /assets/) of the rendered content, in the client manifest; the site info itself is inline.
 * `customers` is null when content/customers has no story: the site then has no Customers links.
 */
export type ContentManifest = { site: SiteInfo; customers: string | null; changelog: string };

export const emptySite: SiteInfo = { starCount: null, repoUrl: null, discordUrl: null, socialUrl: null, backedBy: null };
