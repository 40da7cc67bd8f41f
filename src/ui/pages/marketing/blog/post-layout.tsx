import type { ReactNode } from "react";
import { Link } from "react-router";
import { SitePage } from "~/ui/pages/marketing/site-chrome.tsx";

/**
 * A blog post's page: header, title (the document title ends in '| Tapscope'), date, body, a way back. The post keeps
 * the site's column: its first line starts where the header's logo does.
 */
export function PostLayout({ title, date, subtitle, children }: { title: string; date: string; subtitle: string; children: ReactNode }) {
  return (
    <SitePage title={title} main="max-w-6xl py-10 sm:py-14">
      <p className="text-sm text-zinc-400">
        <Link to="/blog" className="hover:text-zinc-200">
          Blog
        </Link>{" "}
        · <time>{date}</time>
      </p>
      <h1 className="mt-3 max-w-3xl text-3xl font-semibold tracking-tight text-zinc-100 sm:text-5xl">{title}</h1>
      <p className="mt-4 max-w-3xl text-lg text-zinc-400">{subtitle}</p>
      <div className="mt-8">{children}</div>
    </SitePage>
  );
}
