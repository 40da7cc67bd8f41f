import { useEffect, useRef, useState } from "react";
import { useAnimates } from "./use-visible.ts";

/**
 * Copy as cURL's timeline in seconds: wait 0.5 s, the cursor moves to the row (its menu opens), the
 * click on "Copy as cURL" at 2.4 s, 'Copied!' from 2.7 s until 5 s, start over at 5.8 s.
 */
const CURL_STEPS = [0.5, 2.4, 2.7, 5, 5.8] as const;
const MENU_OPENS = 1.4;

function useElapsed(periodSeconds: number, animates: boolean, still: number): number {
  const [elapsed, setElapsed] = useState(still);
  useEffect(() => {
    if (!animates) {
      setElapsed(still);
      return;
    }
    const started = performance.now();
    const timer = setInterval(() => setElapsed(((performance.now() - started) / 1000) % periodSeconds), 100);
    return () => clearInterval(timer);
  }, [animates, periodSeconds, still]);
  return elapsed;
}

function CopyAsCurl() {
  const box = useRef<HTMLDivElement>(null);
  const t = useElapsed(CURL_STEPS[4], useAnimates(box), 3);
  const isHover = t >= CURL_STEPS[0] && t < CURL_STEPS[3];
  const isMenu = t >= MENU_OPENS && t < CURL_STEPS[2];
  const isPicked = t >= CURL_STEPS[1] && t < CURL_STEPS[2];
  const isCopied = t >= CURL_STEPS[2] && t < CURL_STEPS[3];
  const requests = [
    ["GET", "/api/orders/1042", "200", "12ms"],
    ["POST", "/api/checkout", "502", "1.2s"],
    ["GET", "/api/users/77", "200", "8ms"],
  ];
  return (
    <div ref={box} className="relative rounded-lg border border-zinc-800 bg-zinc-950 p-3 font-mono text-xs">
      {requests.map(([method, path, status, ms], i) => (
        <div key={path} className={`flex gap-3 rounded px-2 py-1.5 ${i === 1 && isHover ? "bg-zinc-800/70" : ""}`}>
          <span className="w-10 text-zinc-400">{method}</span>
          <span className="flex-1 truncate text-zinc-200">{path}</span>
          <span className={status === "502" ? "text-red-400" : "text-emerald-300"}>{status}</span>
          <span className="w-10 text-right text-zinc-400">{ms}</span>
        </div>
      ))}
      {isMenu ? (
        <div className="absolute top-16 right-6 w-40 rounded-md border border-zinc-700 bg-zinc-900 py-1 shadow-xl">
          <div className={`px-3 py-1 ${isPicked ? "bg-zinc-700 text-zinc-100" : "text-zinc-300"}`}>Copy as cURL</div>
          <div className="px-3 py-1 text-zinc-400">Copy link</div>
          <div className="px-3 py-1 text-zinc-400">Export HAR</div>
        </div>
      ) : null}
      <div
        className={`mt-2 truncate rounded bg-zinc-900 px-2 py-1 text-zinc-300 transition-opacity ${isCopied ? "opacity-100" : "opacity-0"}`}
      >
        {"✓ Copied! curl -X POST https://shop.example/api/checkout -H 'content-type: application/json' --data '{\"cart\":…}'"}
      </div>
    </div>
  );
}

function Waterfall() {
  const steps = [
    { name: "connect", start: 0, ms: 4 },
    { name: "TLS handshake", start: 4, ms: 18 },
    { name: "send", start: 22, ms: 2 },
    { name: "wait", start: 24, ms: 386, culprit: true },
    { name: "receive", start: 410, ms: 9 },
  ];
  const total = 419;
  return (
    <div className="rounded-lg border border-zinc-800 bg-zinc-950 p-4 font-mono text-xs">
      {steps.map((step) => (
        <div key={step.name} className="flex items-center gap-3 py-1">
          <span className={`w-28 shrink-0 ${step.culprit ? "text-red-300" : "text-zinc-400"}`}>{step.name}</span>
          <div className="relative h-3 flex-1 rounded bg-zinc-900">
            <div
              className={`absolute inset-y-0 rounded ${step.culprit ? "bg-red-500/70" : "bg-sky-400/60"}`}
              style={{ left: `${(step.start / total) * 100}%`, width: `${Math.max(1, (step.ms / total) * 100)}%` }}
            />
          </div>
          <span className="w-12 text-right text-zinc-300">{step.ms}ms</span>
        </div>
      ))}
      <p className="mt-2 text-red-300">⚠ 92 % of this request is the server's wait: the upstream call is the culprit</p>
    </div>
  );
}

function DropIn() {
  return (
    <div className="rounded-lg border border-zinc-800 bg-zinc-950 p-4 font-mono text-xs leading-6">
      <div className="text-red-300">- CMD ["node", "server.js"]</div>
      <div className="text-emerald-300">+ CMD ["tapscope", "run", "--", "node", "server.js"]</div>
      <p className="mt-3 font-sans text-sm text-zinc-400">One line in your start command. No SDK, no code changes, no sidecar.</p>
    </div>
  );
}

/** The three feature demos (a fourth, third-party outages, is hidden as in the spec). */
export function FeatureDemos() {
  const features = [
    { title: "Replay any request as cURL", text: "Find the failing call, copy it as a cURL command, run it again.", demo: <CopyAsCurl /> },
    {
      title: "See where the time goes",
      text: "Every request's latency broken down: connect, TLS, send, wait, receive.",
      demo: <Waterfall />,
    },
    { title: "Drop-in setup", text: "Wrap your start command. Python, Node, Go, Java, PHP, Ruby or a static binary.", demo: <DropIn /> },
  ];
  return (
    <div className="grid gap-6 lg:grid-cols-3">
      {features.map((feature) => (
        <article key={feature.title} className="flex min-w-0 flex-col gap-4 rounded-xl border border-zinc-900 bg-zinc-900/20 p-5">
          <div>
            <h3 className="font-medium text-zinc-100">{feature.title}</h3>
            <p className="mt-1 text-sm text-zinc-400">{feature.text}</p>
          </div>
          {feature.demo}
        </article>
      ))}
    </div>
  );
}
