import { Link, type LoaderFunctionArgs, useLoaderData } from "react-router";
import type { CustomerStory } from "~/lib/site-content.ts";
import { pageEnv } from "~/ui/env.ts";
import { reportEvent } from "~/ui/lib/events.ts";
import { SitePage } from "~/ui/pages/marketing/site-chrome.tsx";

/** /customers (every story) and /customers/:customer (one); an unknown customer is a 404. */
export async function customersLoader({ request, params, context }: LoaderFunctionArgs) {
  const stories = await pageEnv(context).getContent(request, "customers");
  if (params.customer && !stories.some((story) => story.slug === params.customer))
    throw new Response("no such customer", { status: 404, statusText: "Not Found" });
  return { stories, slug: params.customer ?? null };
}

function ExampleBadge() {
  return <span className="rounded-full border border-amber-400/40 px-2 py-0.5 text-xs font-medium text-amber-300">Example</span>;
}

export function CustomersPage() {
  const { stories, slug } = useLoaderData() as Awaited<ReturnType<typeof customersLoader>>;
  const story = slug ? stories.find((s) => s.slug === slug) : undefined;
  return (
    <SitePage title={story ? story.title : "Customers"} main="max-w-6xl py-12 sm:py-16">
      {story ? <CaseStudy story={story} /> : <StoryList stories={stories} />}
    </SitePage>
  );
}

function StoryList({ stories }: { stories: CustomerStory[] }) {
  return (
    <>
      <h1 className="text-3xl font-semibold tracking-tight text-zinc-100 sm:text-4xl">Customers</h1>
      <p className="mt-3 max-w-2xl text-zinc-400">How teams use Tapscope to see what their services send and receive.</p>
      {stories.length === 0 ? <p className="mt-10 text-zinc-400">No stories yet.</p> : null}
      <ul className="mt-10 grid gap-4 md:grid-cols-2">
        {stories.map((story) => (
          <li key={story.slug}>
            <Link
              to={`/customers/${story.slug}`}
              className="flex h-full flex-col rounded-xl border border-zinc-800 p-6 hover:border-zinc-600 hover:bg-zinc-900/40"
            >
              <span className="flex items-center gap-2 text-sm text-zinc-400">
                {story.company} {story.isExample ? <ExampleBadge /> : null}
              </span>
              <span className="mt-3 text-lg font-medium text-zinc-100">{story.title}</span>
              <span className="mt-2 text-sm text-zinc-400">{story.description}</span>
              <span className="mt-4 text-sm text-sky-300">Read the case study →</span>
            </Link>
          </li>
        ))}
      </ul>
    </>
  );
}

function CaseStudy({ story }: { story: CustomerStory }) {
  return (
    <article className="grid gap-10 lg:grid-cols-[minmax(0,1fr)_18rem]">
      <div className="min-w-0">
        <p className="flex items-center gap-2 text-sm text-zinc-400">
          <Link to="/customers" className="hover:text-zinc-200">
            Customers
          </Link>
          <span aria-hidden="true">/</span> {story.company} {story.isExample ? <ExampleBadge /> : null}
        </p>
        <h1 className="mt-3 text-3xl font-semibold tracking-tight text-zinc-100 sm:text-4xl">{story.title}</h1>
        <p className="mt-4 text-lg text-zinc-400">{story.description}</p>
        {story.quote ? (
          <blockquote className="mt-8 border-l-2 border-zinc-700 pl-4 text-zinc-200">
            <p>“{story.quote}”</p>
            {story.person ? (
              <footer className="mt-2 text-sm text-zinc-400">
                {story.person}
                {story.role ? `, ${story.role}` : ""}
              </footer>
            ) : null}
          </blockquote>
        ) : null}
        <div
          className="docs-prose mt-8"
          // Rendered at build time from content/customers/*.md, raw HTML shown as text.
          // biome-ignore lint/security/noDangerouslySetInnerHtml: our own build-time markdown, raw HTML escaped
          dangerouslySetInnerHTML={{ __html: story.html }}
        />
      </div>
      <aside className="h-fit rounded-xl border border-zinc-800 p-6 text-sm lg:sticky lg:top-20">
        <dl className="space-y-4">
          <div>
            <dt className="text-zinc-400">Company</dt>
            <dd className="text-zinc-100">{story.company}</dd>
          </div>
          <div>
            <dt className="text-zinc-400">Website</dt>
            <dd>
              <a href={story.website} rel="noopener noreferrer" className="text-sky-300 hover:text-sky-200">
                {story.website.replace(/^https?:\/\//, "")}
              </a>
            </dd>
          </div>
          <div>
            <dt className="text-zinc-400">Industry</dt>
            <dd className="text-zinc-100">{story.industry}</dd>
          </div>
        </dl>
        <Link
          to="/login"
          onClick={() => void reportEvent("clickLogin_customersPage", { location: `/customers/${story.slug}` })}
          className="mt-6 block rounded-md bg-zinc-100 px-4 py-2 text-center font-medium text-zinc-900 hover:bg-white"
        >
          Try Tapscope for free
        </Link>
      </aside>
    </article>
  );
}
