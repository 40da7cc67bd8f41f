import { Link } from "react-router";
import { SitePage } from "~/ui/pages/marketing/site-chrome.tsx";

const posts = [
  { to: "/blog/grpc-debugging", title: "gRPC debugging sucks so we fixed it", date: "Sep 29, 2025", iso: "2025-09-29" },
  { to: "/blog/http2-preface", title: "Every byte explained", date: "May 30, 2025", iso: "2025-05-30" },
];

/** /blog: the posts, newest first. */
export function BlogIndexPage() {
  return (
    <SitePage title={"Blog"} main="max-w-3xl py-12 sm:py-16">
      <h1 className="text-3xl font-semibold tracking-tight text-zinc-100 sm:text-4xl">Blog</h1>
      <ol className="mt-10 space-y-6">
        {posts.map((post) => (
          <li key={post.to} className="flex flex-col gap-1 sm:flex-row sm:items-baseline sm:gap-6">
            <time dateTime={post.iso} className="w-32 shrink-0 font-mono text-sm text-zinc-400">
              {post.date}
            </time>
            <Link to={post.to} className="text-lg text-zinc-100 hover:underline">
              {post.title}
            </Link>
          </li>
        ))}
      </ol>
      <p className="mt-10 font-mono text-zinc-400">{"// EOF"}</p>
    </SitePage>
  );
}
