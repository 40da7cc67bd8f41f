import { Link } from "react-router";
import { PlaceholderPage } from "~/ui/pages/marketing/site-chrome.tsx";

export function LandingPage() {
  return (
    <PlaceholderPage title="Zero Code Network Tracer" heading="Inspect element for your infra">
      <p>
        Run any server under <code className="font-mono text-zinc-200">tapscope run -- &lt;command&gt;</code> and watch every HTTP request
        it serves and makes, live, with no code changes.
      </p>
      <div className="mt-8 flex gap-3">
        <Link to="/login" className="rounded-md bg-zinc-100 px-4 py-2 text-sm font-medium text-zinc-900 hover:bg-white">
          Start
        </Link>
        <Link to="/login" className="rounded-md border border-zinc-700 px-4 py-2 text-sm font-medium text-zinc-100 hover:bg-zinc-900">
          Try for free
        </Link>
      </div>
    </PlaceholderPage>
  );
}
