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

export function PricingPage() {
  return (
    <PlaceholderPage title="Pricing" heading="Pricing">
      <p>Predictable flat pricing with a free tier. No credit card required.</p>
    </PlaceholderPage>
  );
}

export function BlogIndexPage() {
  return (
    <PlaceholderPage title="Blog" heading="Blog">
      <ul className="space-y-3">
        <li>
          <Link className="text-zinc-200 hover:underline" to="/blog/grpc-debugging">
            gRPC debugging sucks so we fixed it
          </Link>{" "}
          <span className="text-zinc-500">Sep 29, 2025</span>
        </li>
        <li>
          <Link className="text-zinc-200 hover:underline" to="/blog/http2-preface">
            Every byte explained: the HTTP/2 preface
          </Link>{" "}
          <span className="text-zinc-500">May 30, 2025</span>
        </li>
      </ul>
      <p className="mt-6 font-mono text-zinc-600">{"// EOF"}</p>
    </PlaceholderPage>
  );
}

export function Http2PrefacePost() {
  return <PlaceholderPage title="Every byte explained" heading="Every byte explained" />;
}

export function GrpcDebuggingPost() {
  return <PlaceholderPage title="gRPC debugging sucks so we fixed it" heading="gRPC debugging sucks so we fixed it" />;
}
