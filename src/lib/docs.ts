/**
 * The documentation as the server and the browser see it: pages rendered from docs/site/*.md at build time
 * (scripts/docs/render-docs.ts) into content-hashed JSON assets, one per page plus an index for the sidebar.
 */
export type DocHeading = { id: string; text: string; depth: 2 | 3 };

export type DocIndexEntry = { slug: string; title: string; section: string; order: number; description: string };

export type DocPage = DocIndexEntry & { html: string; headings: DocHeading[] };

/** Asset names (below /assets/) of the rendered docs, in the client manifest. */
export type DocsManifest = { index: string; pages: Record<string, string> };

/** The sidebar's groups, in this order; a page naming another section is refused at build time. */
export const DOC_SECTIONS = ["Getting started", "Guides", "Stacks", "Self-hosting", "Reference", "Help"] as const;

export const DOC_SLUG = /^[a-z0-9]+(?:-[a-z0-9]+)*$/;

/** The index in sidebar order: by section, then order, then title. */
export function sortDocIndex(entries: DocIndexEntry[]): DocIndexEntry[] {
  const rank = (section: string) => DOC_SECTIONS.indexOf(section as (typeof DOC_SECTIONS)[number]);
  return [...entries].sort((a, b) => rank(a.section) - rank(b.section) || a.order - b.order || a.title.localeCompare(b.title));
}

/** Entries whose title or description contains every word of the query (case-insensitive), best first. */
export function searchDocs(entries: DocIndexEntry[], query: string): DocIndexEntry[] {
  const words = query.toLowerCase().split(/\s+/).filter(Boolean).slice(0, 8);
  if (words.length === 0) return entries;
  const scored = entries.flatMap((entry) => {
    const title = entry.title.toLowerCase();
    const text = `${title} ${entry.description.toLowerCase()} ${entry.slug}`;
    if (!words.every((w) => text.includes(w))) return [];
    return [{ entry, score: words.filter((w) => title.includes(w)).length }];
  });
  return scored.sort((a, b) => b.score - a.score).map((s) => s.entry);
}
