import { Link } from "react-router";
import { PostLayout } from "./post-layout.tsx";

/** /blog/grpc-debugging: the gRPC launch post. */
export function GrpcDebuggingPost() {
  return (
    <PostLayout
      title="gRPC debugging sucks so we fixed it"
      date="Sep 29, 2025"
      subtitle="Tapscope now shows every gRPC call a service makes or serves: method, status and messages, with no .proto files."
    >
      <div className="docs-prose">
        <p>
          <Link to="/login" className="not-prose rounded bg-emerald-500/15 px-1.5 py-0.5 font-mono text-xs text-emerald-300 no-underline">
            OPEN
          </Link>{" "}
          gRPC support is live for everyone, on every plan.
        </p>
        <h2 id="the-problem">The problem</h2>
        <p>
          gRPC is binary protobuf inside HTTP/2 frames, compressed headers and all. When a call fails you get a status code and, if you are
          lucky, a message. Seeing what was actually sent usually means adding interceptors, redeploying, or running a proxy that needs your{" "}
          <code>.proto</code> files and a client configured to use it.
        </p>
        <h2 id="what-you-get">What you get</h2>
        <ul>
          <li>
            One request per call: the service and method from the path, like <code>/echo.v1.Echo/Say</code>.
          </li>
          <li>
            <code>grpc-status</code> and <code>grpc-message</code> from the trailers, so failed calls stand out in the list.
          </li>
          <li>
            The messages decoded without a schema: field numbers and values, nested messages and gzip-compressed frames included, e.g.{" "}
            <code>{'{1: "hello", 2: 150, 3: {1: "x"}}'}</code>.
          </li>
          <li>gRPC over TLS too: outbound calls are decrypted like any HTTPS (see HTTPS capture in the docs).</li>
        </ul>
        <h2 id="how">How</h2>
        <p>
          Nothing changes in your service: start it with <code>tapscope run -- ./server</code>. Tapscope reads the HTTP/2 frames as they
          pass, decodes HPACK, and splits each stream into a request. <Link to="/docs/quickstart">The quickstart</Link> takes a minute;
          start on the <Link to="/pricing">free tier</Link>.
        </p>
        <p className="mt-10">
          <Link
            to="/login"
            className="not-prose inline-block rounded-md bg-zinc-100 px-4 py-2 font-medium text-zinc-900 no-underline hover:bg-white"
          >
            Try for free
          </Link>
        </p>
      </div>
    </PostLayout>
  );
}
