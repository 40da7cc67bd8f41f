import { useMemo, useState } from "react";
import { Link, type LoaderFunctionArgs, useLoaderData } from "react-router";
import { DOC_SECTIONS, type DocIndexEntry, type DocPage, searchDocs } from "~/lib/docs.ts";
import { pageEnv } from "~/ui/env.ts";
import { SiteFooter, SiteHeader } from "~/ui/pages/marketing/site-chrome.tsx";
import { usePublicConfig } from "~/ui/shell.tsx";

type DocsData = { index: DocIndexEntry[]; page: DocPage | null };

/** /docs (the overview) and /docs/:page; an unknown page is a 404. */
export async function docsLoader({ request, params, context }: LoaderFunctionArgs): Promise<DocsData> {
  const slug = params.page ?? "";
  const docs = await pageEnv(context).getDocs(request, slug);
  if (slug && !docs.page) throw new Response("no such page", { status: 404, statusText: "Not Found" });
  return docs;
}

/** The docs write `{{server}}` where a command names the Tapscope server: this server's PUBLIC_URL is shown. */
export function withServer(html: string, publicUrl: string): string {
  const escaped = publicUrl.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
  return html.replaceAll("{{server}}", escaped);
}

export function DocsPage() {
  const { index, page } = useLoaderData() as DocsData;
  const { publicUrl } = usePublicConfig();
  const [position, previous, next] = useMemo(() => {
    const at = page ? index.findIndex((entry) => entry.slug === page.slug) : -1;
    return [at, at > 0 ? index[at - 1] : undefined, at >= 0 ? index[at + 1] : undefined];
  }, [index, page]);
  return (
    <div className="flex min-h-dvh flex-col">
      <title>{`${page ? page.title : "Documentation"} | Tapscope`}</title>
      {page ? <meta name="description" content={page.description} /> : null}
      <SiteHeader />
      <div className="mx-auto grid w-full max-w-7xl flex-1 grid-cols-1 gap-8 px-4 py-8 lg:grid-cols-[15rem_minmax(0,1fr)] xl:grid-cols-[15rem_minmax(0,1fr)_13rem]">
        <aside className="lg:sticky lg:top-20 lg:max-h-[calc(100dvh-6rem)] lg:self-start lg:overflow-y-auto">
          {/* Phones: the menu folds away above the page; wide screens: always shown beside it. */}
          <details className="rounded-lg border border-zinc-800 lg:hidden">
            <summary className="cursor-pointer px-3 py-2 text-sm text-zinc-300">{page ? `Docs menu · ${page.title}` : "Docs menu"}</summary>
            <DocsNav index={index} current={page?.slug} />
          </details>
          <nav aria-label="Documentation" className="hidden lg:block">
            <DocsNav index={index} current={page?.slug} />
          </nav>
        </aside>
        <main className="min-w-0">
          {page ? (
            <>
              <p className="text-xs font-medium tracking-wide text-zinc-400 uppercase">{page.section}</p>
              <article
                className="docs-prose"
                // Rendered at build time from this repository's docs/site/*.md, with any raw HTML shown as text.
                // biome-ignore lint/security/noDangerouslySetInnerHtml: our own build-time markdown, raw HTML escaped
                dangerouslySetInnerHTML={{ __html: withServer(page.html, publicUrl) }}
              />
              <nav aria-label="Previous and next page" className="mt-12 flex justify-between gap-4 border-t border-zinc-900 pt-6 text-sm">
                {previous ? (
                  <Link to={`/docs/${previous.slug}`} className="text-zinc-400 hover:text-zinc-100">
                    ← {previous.title}
                  </Link>
                ) : (
                  <span />
                )}
                {next && position >= 0 ? (
                  <Link to={`/docs/${next.slug}`} className="text-right text-zinc-400 hover:text-zinc-100">
                    {next.title} →
                  </Link>
                ) : null}
              </nav>
            </>
          ) : (
            <DocsOverview index={index} />
          )}
        </main>
        {page && page.headings.length > 0 ? (
          <nav aria-label="On this page" className="hidden text-sm xl:sticky xl:top-20 xl:block xl:self-start">
            <p className="font-medium text-zinc-300">On this page</p>
            <ul className="mt-3 space-y-2">
              {page.headings.map((heading) => (
                <li key={heading.id} className={heading.depth === 3 ? "pl-3" : ""}>
                  <a href={`#${heading.id}`} className="text-zinc-400 hover:text-zinc-200">
                    {heading.text}
                  </a>
                </li>
              ))}
            </ul>
          </nav>
        ) : null}
      </div>
      <SiteFooter />
    </div>
  );
}

/** The sidebar: a search over titles and descriptions, then the pages by section. */
function DocsNav({ index, current }: { index: DocIndexEntry[]; current?: string }) {
  const [query, setQuery] = useState("");
  const found = useMemo(() => searchDocs(index, query), [index, query]);
  return (
    <div className="px-3 pb-3 lg:px-0">
      <label className="block">
        <span className="sr-only">Search the docs</span>
        <input
          type="search"
          value={query}
          onChange={(e) => setQuery(e.target.value.slice(0, 100))}
          placeholder="Search docs"
          className="w-full rounded-md border border-zinc-800 bg-zinc-900 px-3 py-1.5 text-sm text-zinc-200 placeholder:text-zinc-400 focus:border-zinc-600 focus:outline-none"
        />
      </label>
      {query ? (
        <ul className="mt-4 space-y-1" aria-label="Search results">
          {found.length === 0 ? <li className="text-sm text-zinc-400">No page matches “{query}”.</li> : null}
          {found.map((entry) => (
            <NavItem key={entry.slug} entry={entry} current={current} />
          ))}
        </ul>
      ) : (
        DOC_SECTIONS.map((section) => {
          const entries = index.filter((entry) => entry.section === section);
          if (entries.length === 0) return null;
          return (
            <div key={section} className="mt-5">
              <p className="text-xs font-medium tracking-wide text-zinc-400 uppercase">{section}</p>
              <ul className="mt-2 space-y-1">
                {entries.map((entry) => (
                  <NavItem key={entry.slug} entry={entry} current={current} />
                ))}
              </ul>
            </div>
          );
        })
      )}
    </div>
  );
}

function NavItem({ entry, current }: { entry: DocIndexEntry; current?: string }) {
  const isCurrent = entry.slug === current;
  return (
    <li>
      <Link
        to={`/docs/${entry.slug}`}
        aria-current={isCurrent ? "page" : undefined}
        className={`block rounded-md px-2 py-1 text-sm ${isCurrent ? "bg-zinc-900 text-zinc-100" : "text-zinc-400 hover:text-zinc-100"}`}
      >
        {entry.title}
      </Link>
    </li>
  );
}

function DocsOverview({ index }: { index: DocIndexEntry[] }) {
  return (
    <div>
      <h1 className="text-3xl font-semibold tracking-tight text-zinc-100">Documentation</h1>
      <p className="mt-3 max-w-2xl text-zinc-400">
        Trace any server with <code className="font-mono text-zinc-200">tapscope run -- &lt;command&gt;</code>: start with the quickstart,
        then pick your stack.
      </p>
      {DOC_SECTIONS.map((section) => {
        const entries = index.filter((entry) => entry.section === section);
        if (entries.length === 0) return null;
        return (
          <section key={section} className="mt-10">
            <h2 className="text-lg font-medium text-zinc-200">{section}</h2>
            <ul className="mt-4 grid gap-3 sm:grid-cols-2">
              {entries.map((entry) => (
                <li key={entry.slug}>
                  <Link
                    to={`/docs/${entry.slug}`}
                    className="block h-full rounded-lg border border-zinc-800 p-4 hover:border-zinc-600 hover:bg-zinc-900/50"
                  >
                    <span className="font-medium text-zinc-100">{entry.title}</span>
                    <span className="mt-1 block text-sm text-zinc-400">{entry.description}</span>
                  </Link>
                </li>
              ))}
            </ul>
          </section>
        );
      })}
    </div>
  );
}
