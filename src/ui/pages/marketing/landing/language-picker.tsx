import { useEffect, useRef, useState } from "react";
import { usePublicConfig } from "~/ui/shell.tsx";
import { CopyButton } from "./copy-button.tsx";

export const LANGUAGES = [
  { id: "python", name: "Python", mark: "Py", run: "python main.py" },
  { id: "node", name: "Node.js", mark: "JS", run: "node server.js" },
  { id: "go", name: "Go", mark: "Go", run: "./main" },
  { id: "rust", name: "Rust", mark: "Rs", run: "./main" },
  { id: "php", name: "PHP", mark: "PHP", run: "php artisan serve" },
  { id: "ruby", name: "Ruby", mark: "Rb", run: "ruby app.rb" },
] as const;
type LanguageId = (typeof LANGUAGES)[number]["id"];

/**
 * The language row: hover names it, a click shows the two commands (install, run) with copy buttons. On wider screens
 * it sticks under the header once scrolled past its place, only as far as the section after it (its parent ends
 * there), and then shows Python if nothing was picked; on a phone it stays in place, where a pinned bar would take a
 * fifth of the screen.
 */
export function LanguagePicker() {
  const { publicUrl } = usePublicConfig();
  const [picked, setPicked] = useState<LanguageId | null>(null);
  const [hovered, setHovered] = useState<string | null>(null);
  const [isStuck, setStuck] = useState(false);
  const sentinel = useRef<HTMLDivElement>(null);
  const bar = useRef<HTMLElement>(null);
  useEffect(() => {
    const el = sentinel.current;
    if (!el || typeof IntersectionObserver === "undefined") return;
    const observer = new IntersectionObserver(([entry]) => {
      const isSticky = bar.current !== null && getComputedStyle(bar.current).position === "sticky";
      const stuck = Boolean(isSticky && entry && !entry.isIntersecting && entry.boundingClientRect.top < 0);
      setStuck(stuck);
      if (stuck) setPicked((current) => current ?? "python");
    });
    observer.observe(el);
    return () => observer.disconnect();
  }, []);
  const language = LANGUAGES.find((l) => l.id === picked);
  const install = `curl -fsSL ${publicUrl}/install.sh | sh`;
  return (
    <>
      <div ref={sentinel} aria-hidden="true" className="h-px" />
      <section
        ref={bar}
        aria-label="Pick your language"
        data-stuck={isStuck ? "true" : undefined}
        className={`z-30 border-y md:sticky md:top-14 border-zinc-900 bg-zinc-950/90 backdrop-blur transition-shadow ${isStuck ? "shadow-lg shadow-black/40" : ""}`}
      >
        <div className="mx-auto flex max-w-6xl flex-col gap-3 px-4 py-3 md:flex-row md:items-center">
          <p className="text-sm text-zinc-300 md:w-56" aria-live="polite">
            Use Tapscope with <span className="text-zinc-100">{hovered ?? language?.name ?? "any language"}</span>
          </p>
          <div className="flex gap-2 overflow-x-auto">
            {LANGUAGES.map((l) => (
              <button
                key={l.id}
                type="button"
                aria-pressed={picked === l.id}
                aria-label={l.mark === l.name ? l.name : `${l.name} (${l.mark})`}
                onClick={() => setPicked(l.id)}
                onMouseEnter={() => setHovered(l.name)}
                onMouseLeave={() => setHovered(null)}
                onFocus={() => setHovered(l.name)}
                onBlur={() => setHovered(null)}
                className={`flex size-12 shrink-0 items-center sm:size-14 justify-center rounded-lg border font-mono text-sm font-semibold focus-visible:outline focus-visible:outline-2 focus-visible:outline-sky-400 ${
                  picked === l.id
                    ? "border-emerald-400/60 bg-emerald-500/10 text-emerald-200"
                    : "border-zinc-800 text-zinc-300 hover:border-zinc-600"
                }`}
              >
                {l.mark}
              </button>
            ))}
          </div>
        </div>
        {language ? (
          <div className="mx-auto max-w-6xl px-4 pb-3">
            <div className="space-y-1 rounded-lg border border-zinc-800 bg-zinc-900 p-3 font-mono text-xs text-zinc-200 sm:text-sm">
              {[install, `tapscope run -- ${language.run}`].map((line) => (
                <div key={line} className="flex items-center justify-between gap-3">
                  {/* Wrapped, never cut: a phone shows the whole command. */}
                  <code className="min-w-0 whitespace-pre-wrap [overflow-wrap:anywhere]" data-command>
                    <span className="text-zinc-500 select-none">$ </span>
                    {line}
                  </code>
                  <CopyButton text={line} label={`Copy: ${line}`} />
                </div>
              ))}
            </div>
          </div>
        ) : null}
      </section>
    </>
  );
}
