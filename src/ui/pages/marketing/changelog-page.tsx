import { type LoaderFunctionArgs, redirect, useLoaderData } from "react-router";
import type { ChangelogEntry } from "~/lib/site-content.ts";
import { pageEnv } from "~/ui/env.ts";
import { PlaceholderPage, SitePage } from "~/ui/pages/marketing/site-chrome.tsx";
import { usePublicConfig } from "~/ui/shell.tsx";

/** /changelog: content/changelog.md, newest first as written there. */
export async function changelogLoader({ request, context }: LoaderFunctionArgs): Promise<ChangelogEntry[]> {
  return pageEnv(context).getContent(request, "changelog");
}

export function ChangelogPage() {
  const entries = useLoaderData() as ChangelogEntry[];
  return (
    <SitePage title={"Changelog"} main="max-w-3xl py-12 sm:py-16">
      <h1 className="text-3xl font-semibold tracking-tight text-zinc-100 sm:text-4xl">Changelog</h1>
      {entries.length === 0 ? <p className="mt-6 text-zinc-400">Nothing released yet.</p> : null}
      <ol className="mt-10 space-y-12">
        {entries.map((entry) => (
          <li key={entry.version} className="grid gap-2 sm:grid-cols-[9rem_minmax(0,1fr)]">
            <div>
              <h2 className="font-mono text-lg text-zinc-100">{entry.version}</h2>
              <p className="text-sm text-zinc-400">{entry.date}</p>
            </div>
            <div
              className="docs-prose"
              // Rendered at build time from content/changelog.md, raw HTML shown as text.
              // biome-ignore lint/security/noDangerouslySetInnerHtml: our own build-time markdown, raw HTML escaped
              dangerouslySetInnerHTML={{ __html: entry.html }}
            />
          </li>
        ))}
      </ol>
    </SitePage>
  );
}

/** /discord goes to the community link of content/site.json; without one (no link points here then), help by e-mail. */
export function discordLoader({ context }: LoaderFunctionArgs) {
  const url = pageEnv(context).getSite().discordUrl;
  return url ? redirect(url) : null;
}

export function DiscordPage() {
  const { supportEmail } = usePublicConfig();
  return (
    <PlaceholderPage title="Community" heading="Community">
      <p>
        There is no community chat here yet. For help, write to{" "}
        <a className="text-zinc-200 underline" href={`mailto:${supportEmail}`}>
          {supportEmail}
        </a>
        .
      </p>
    </PlaceholderPage>
  );
}
