import { useEffect, useRef, useState } from "react";
import { useAnimates } from "./use-visible.ts";

/**
 * The landing demo's loop: init, the terminal after 100 ms, 50 ms a character, the transition 500 ms after the command is
 * typed, the browser 450 ms after that, a row every 35 ms of 300, a 2 s fade starting at 75 % of the rows, then init.
 */
export const DEMO = { rows: 300, typeMs: 50, rowMs: 35, fadeMs: 2000, fadeAt: 0.75, initMs: 100, typedMs: 500, transitionMs: 450 } as const;
const COMMAND = "tapscope run -- node server.js";
const SHOWN = 11;

type Row = { n: number; ms: number; status: number; method: string; path: string };

/** The rows the mock dashboard streams: generated once from a fixed seed, so server and browser agree. */
export function demoRows(count = DEMO.rows): Row[] {
  let seed = 42;
  const next = () => {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff;
    return seed / 0x7fffffff;
  };
  const paths = ["/api/orders", "/api/users/:id", "/api/cart", "/healthz", "/api/search?q=shoes", "/api/checkout", "/static/app.js"];
  return Array.from({ length: count }, (_, n) => {
    const r = next();
    const status = r < 0.04 ? 500 : r < 0.1 ? 404 : r < 0.2 ? 201 : 200;
    const method = status === 201 ? "POST" : next() < 0.15 ? "PUT" : "GET";
    const path = paths[Math.floor(next() * paths.length)]!.replace(":id", String(1000 + Math.floor(next() * 9000)));
    return { n, ms: Math.round(2 + next() ** 3 * 400), status, method, path };
  });
}

const rows = demoRows();
type Phase = "init" | "typing" | "transition" | "streaming";

/** The animated loop: a terminal types the run command, then a browser mock streams requests, fades and starts over. */
export function DemoLoop() {
  const box = useRef<HTMLDivElement>(null);
  const animates = useAnimates(box);
  const [phase, setPhase] = useState<Phase>("streaming");
  const [typed, setTyped] = useState(COMMAND.length);
  const [shown, setShown] = useState(SHOWN);
  const [isFading, setFading] = useState(false);
  const [cycles, setCycles] = useState(0);

  useEffect(() => {
    if (!animates) return;
    let cancelled = false;
    const timers: Timer[] = [];
    const after = (ms: number, fn: () => void) => timers.push(setTimeout(() => !cancelled && fn(), ms));
    const run = () => {
      setPhase("init");
      setTyped(0);
      setShown(0);
      setFading(false);
      after(DEMO.initMs, () => {
        setPhase("typing");
        for (let i = 1; i <= COMMAND.length; i++) after(i * DEMO.typeMs, () => setTyped(i));
        after(COMMAND.length * DEMO.typeMs + DEMO.typedMs, () => {
          setPhase("transition");
          after(DEMO.transitionMs, () => {
            setPhase("streaming");
            for (let i = 1; i <= DEMO.rows; i++) after(i * DEMO.rowMs, () => setShown(i));
            after(DEMO.rows * DEMO.fadeAt * DEMO.rowMs, () => setFading(true));
            after(DEMO.rows * DEMO.fadeAt * DEMO.rowMs + DEMO.fadeMs, () => {
              setCycles((c) => c + 1);
              run();
            });
          });
        });
      });
    };
    run();
    return () => {
      cancelled = true;
      for (const t of timers) clearTimeout(t);
    };
  }, [animates]);

  const visible = rows.slice(Math.max(0, shown - SHOWN), shown).reverse();
  return (
    <div
      ref={box}
      data-phase={phase}
      data-cycles={cycles}
      className="relative h-[26rem] overflow-hidden rounded-xl border border-zinc-800 bg-zinc-950 shadow-2xl"
    >
      <div className="flex h-9 items-center gap-1.5 border-b border-zinc-800 px-3" aria-hidden="true">
        <span className="size-2.5 rounded-full bg-zinc-700" />
        <span className="size-2.5 rounded-full bg-zinc-700" />
        <span className="size-2.5 rounded-full bg-zinc-700" />
        <span className="ml-3 font-mono text-xs text-zinc-400">{phase === "streaming" ? "tapscope · live" : "terminal"}</span>
      </div>
      {phase === "streaming" ? (
        <div
          className={`p-3 transition-opacity ${isFading ? "opacity-0" : "opacity-100"}`}
          style={{ transitionDuration: `${DEMO.fadeMs}ms` }}
        >
          <table className="w-full table-fixed font-mono text-xs">
            <caption className="sr-only">Requests streaming in, newest first</caption>
            <thead className="text-left text-zinc-400">
              <tr>
                <th className="w-16 py-1 font-normal">time</th>
                <th className="w-14 font-normal">status</th>
                <th className="w-14 font-normal">method</th>
                <th className="font-normal">path</th>
              </tr>
            </thead>
            <tbody>
              {visible.map((row) => (
                <tr key={row.n} className="border-t border-zinc-900 text-zinc-300">
                  <td className="py-1.5">{row.ms}ms</td>
                  <td className={row.status >= 500 ? "text-red-400" : row.status >= 400 ? "text-amber-300" : "text-emerald-300"}>
                    {row.status}
                  </td>
                  <td>{row.method}</td>
                  <td className="truncate">{row.path}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : (
        <div className={`p-4 font-mono text-sm text-zinc-200 transition-opacity duration-700 ${phase === "transition" ? "opacity-0" : ""}`}>
          <span className="text-emerald-400">$</span> {COMMAND.slice(0, typed)}
          <span
            className="ml-0.5 inline-block h-4 w-2 animate-pulse bg-zinc-400 align-middle motion-reduce:animate-none"
            aria-hidden="true"
          />
        </div>
      )}
    </div>
  );
}
