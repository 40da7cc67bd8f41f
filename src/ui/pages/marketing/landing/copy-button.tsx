import { useEffect, useState } from "react";

/** Copies `text`; says 'Copied' for 2 s (spec section 9). */
export function CopyButton({ text, label }: { text: string; label: string }) {
  const [isCopied, setCopied] = useState(false);
  useEffect(() => {
    if (!isCopied) return;
    const timer = setTimeout(() => setCopied(false), 2000);
    return () => clearTimeout(timer);
  }, [isCopied]);
  return (
    <button
      type="button"
      aria-label={isCopied ? "Copied" : label}
      onClick={() => {
        void navigator.clipboard?.writeText(text).catch(() => {});
        setCopied(true);
      }}
      className="shrink-0 rounded border border-zinc-700 px-2 py-0.5 text-xs text-zinc-300 hover:bg-zinc-800 focus-visible:outline focus-visible:outline-2 focus-visible:outline-sky-400"
    >
      {isCopied ? "Copied" : "Copy"}
    </button>
  );
}
