import { Link, type LoaderFunctionArgs, useLoaderData } from "react-router";
import type { CustomerStory } from "~/lib/site-content.ts";
import { pageEnv } from "~/ui/env.ts";
import { reportEvent } from "~/ui/lib/events.ts";
import { SiteFooter, SiteHeader } from "~/ui/pages/marketing/site-chrome.tsx";
import { useSite } from "~/ui/shell.tsx";
import { DemoLoop } from "./demo-loop.tsx";
import { FeatureDemos } from "./feature-demos.tsx";
import { GameOfLife } from "./game-of-life.tsx";
import { LanguagePicker } from "./language-picker.tsx";

/** The customer stories (content/customers) for the logo strip and the testimonial. */
export async function landingLoader({ request, context }: LoaderFunctionArgs): Promise<CustomerStory[]> {
  return pageEnv(context).getContent(request, "customers");
}

const startForFree = () => void reportEvent("clickLogin_landingPage_startForFree", { location: "/" });

export function LandingPage() {
  const stories = useLoaderData() as CustomerStory[];
  const site = useSite();
  const testimonial = stories.find((story) => story.quote);
  return (
    <div className="flex min-h-dvh flex-col">
      <title>Zero Code Network Tracer | Tapscope</title>
      <meta
        name="description"
        content="Run any server under tapscope run and see every HTTP request it serves and makes, live. No code changes, no SDK."
      />
      <SiteHeader />
      <Link
        to="/blog/grpc-debugging"
        className="block border-b border-zinc-900 bg-zinc-900/40 px-4 py-2 text-center text-sm text-zinc-300 hover:text-zinc-100"
      >
        <span className="mr-2 rounded bg-emerald-500/15 px-1.5 py-0.5 text-xs text-emerald-300">New</span>
        gRPC debugging sucks so we fixed it →
      </Link>
      <main className="flex-1">
        <section className="relative isolate h-[34rem] overflow-hidden sm:h-[38rem]" aria-labelledby="headline">
          <GameOfLife />
          <div className="pointer-events-none absolute inset-0 bg-gradient-to-b from-zinc-950/30 via-zinc-950/60 to-zinc-950" />
          <div className="pointer-events-none relative mx-auto flex h-full max-w-6xl flex-col items-start justify-center px-4">
            <p className="font-mono text-sm text-emerald-300">Zero code network tracer</p>
            <h1 id="headline" className="mt-3 max-w-3xl text-4xl font-semibold tracking-tight text-zinc-50 sm:text-6xl">
              Inspect element for your infra
            </h1>
            <p className="mt-5 max-w-xl text-lg text-zinc-300">
              Run any server under <code className="font-mono text-zinc-100">tapscope run</code> and watch every HTTP request it serves and
              makes, live. No code changes, no SDK.
            </p>
            <div className="pointer-events-auto mt-8 flex flex-wrap items-center gap-3">
              <Link
                to="/login"
                onClick={startForFree}
                className="rounded-md bg-zinc-100 px-5 py-2.5 font-medium text-zinc-900 hover:bg-white"
              >
                Start
              </Link>
              <Link
                to="/login"
                onClick={startForFree}
                className="rounded-md border border-zinc-600 bg-zinc-950/60 px-5 py-2.5 font-medium text-zinc-100 hover:bg-zinc-900"
              >
                Try for free
              </Link>
              {site.starCount && site.repoUrl ? (
                <a href={site.repoUrl} rel="noopener noreferrer" className="font-mono text-sm text-zinc-300 hover:text-zinc-100">
                  ★ {site.starCount}
                </a>
              ) : null}
              {site.backedBy ? (
                <span title={`Backed by ${site.backedBy}`} className="text-sm text-zinc-400">
                  Backed by {site.backedBy}
                </span>
              ) : null}
            </div>
          </div>
        </section>

        {/* The picker is pinned only while the demo it introduces is on screen. */}
        <div>
          <LanguagePicker />

          <section className="mx-auto max-w-6xl px-4 py-20" aria-labelledby="demo-title">
            <h2 id="demo-title" className="text-2xl font-semibold tracking-tight text-zinc-100 sm:text-3xl">
              From your terminal to a live dashboard
            </h2>
            <p className="mt-2 max-w-2xl text-zinc-400">
              Start your server under tapscope run; open the link it prints; requests stream in.
            </p>
            <div className="mt-8">
              <DemoLoop />
            </div>
          </section>
        </div>

        {stories.length > 0 ? <LogoStrip stories={stories} /> : null}

        <section className="mx-auto max-w-6xl px-4 py-20" aria-labelledby="features-title">
          <h2 id="features-title" className="text-2xl font-semibold tracking-tight text-zinc-100 sm:text-3xl">
            Everything you would add logging for, without the logging
          </h2>
          <div className="mt-8">
            <FeatureDemos />
          </div>
        </section>

        {testimonial ? (
          <section className="mx-auto max-w-6xl px-4 pb-20" aria-label="What users say">
            <figure className="rounded-2xl border border-zinc-800 bg-zinc-900/40 p-8">
              <blockquote className="text-xl text-zinc-100 sm:text-2xl">“{testimonial.quote}”</blockquote>
              <figcaption className="mt-6 flex flex-wrap items-center gap-x-4 gap-y-2 text-sm text-zinc-400">
                <span>
                  {testimonial.person}
                  {testimonial.role ? `, ${testimonial.role}` : ""} · {testimonial.company}
                </span>
                {testimonial.isExample ? (
                  <span className="rounded-full border border-amber-400/40 px-2 py-0.5 text-xs text-amber-300">Example</span>
                ) : null}
                <Link to={`/customers/${testimonial.slug}`} className="text-sky-300 hover:text-sky-200">
                  Read full case study →
                </Link>
              </figcaption>
            </figure>
          </section>
        ) : null}

        <section className="mx-auto max-w-6xl px-4 pb-20" aria-labelledby="languages-title">
          <h2 id="languages-title" className="text-2xl font-semibold tracking-tight text-zinc-100 sm:text-3xl">
            Supports every language
          </h2>
          <p className="mt-2 max-w-2xl text-zinc-400">
            Tapscope intercepts sockets in the kernel, so whatever opens one is traced the same way: Python, Node.js, Bun, Go, Java, PHP,
            Ruby, Rust and static binaries, HTTP/1.1, HTTP/2, gRPC and HTTPS.
          </p>
          <ul className="mt-10 grid gap-4 sm:grid-cols-2 lg:grid-cols-4">
            {[
              ["Predictable pricing", "Unlimited requests on every plan; pay for seats and retention.", "/pricing"],
              [
                "Built on a column database",
                "DuckDB on one machine, ClickHouse when you outgrow it: millions of requests, searched in milliseconds.",
                "/docs/self-hosting",
              ],
              [
                "No code changes",
                "No SDK, no agent in your code, no proxy to configure: one command in front of yours.",
                "/docs/quickstart",
              ],
              ["Always open source", "MIT licensed. Run the whole product on your own machine with one binary.", "/docs/self-hosting"],
            ].map(([title, text, to = "/"]) => (
              <li key={title}>
                <Link to={to} className="block h-full rounded-xl border border-zinc-800 p-5 hover:border-zinc-600">
                  <h3 className="font-medium text-zinc-100">{title}</h3>
                  <p className="mt-2 text-sm text-zinc-400">{text}</p>
                </Link>
              </li>
            ))}
          </ul>
        </section>

        <section className="border-t border-zinc-900 px-4 py-24 text-center" aria-labelledby="cta-title">
          <h2 id="cta-title" className="text-3xl font-semibold tracking-tight text-zinc-100 sm:text-4xl">
            See your first request in a minute
          </h2>
          <Link
            to="/login"
            onClick={startForFree}
            className="mt-8 inline-block rounded-md bg-zinc-100 px-6 py-3 font-medium text-zinc-900 hover:bg-white"
          >
            Start for free
          </Link>
          <p className="mt-3 text-sm text-zinc-400">No credit card required</p>
        </section>
      </main>
      <SiteFooter />
    </div>
  );
}

/** The customers' names as a strip; hovering says who they are (and that the shipped ones are examples). */
function LogoStrip({ stories }: { stories: CustomerStory[] }) {
  const isExample = stories.every((story) => story.isExample);
  return (
    <section className="group border-y border-zinc-900 py-10" aria-label="Teams using Tapscope">
      <ul className="mx-auto flex max-w-6xl flex-wrap items-center justify-center gap-x-12 gap-y-4 px-4">
        {stories.map((story) => (
          <li key={story.slug}>
            <Link to={`/customers/${story.slug}`} className="text-lg font-semibold tracking-tight text-zinc-400 hover:text-zinc-100">
              {story.company}
            </Link>
          </li>
        ))}
      </ul>
      <p className="mt-4 text-center text-sm text-zinc-400 opacity-0 transition-opacity group-focus-within:opacity-100 group-hover:opacity-100">
        {isExample ? "Example companies: their stories show what Tapscope is used for." : "Developers at these teams trace with Tapscope."}
      </p>
    </section>
  );
}
