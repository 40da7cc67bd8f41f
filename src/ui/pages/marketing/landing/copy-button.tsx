import { useCopy } from "~/ui/request-detail/use-copy.ts";

/** Copies `text`; says 'Copied' for 2 s, or that the browser refused. */
export function CopyButton({ text, label }: { text: string; label: string }) {
  const { copiedKey, failedKey, copy } = useCopy(2000);
  const state = copiedKey === text ? "Copied" : failedKey === text ? "Copy failed" : null;
  return (
    <button
      type="button"
      aria-label={state ?? label}
      onClick={() => void copy(text, text)}
      className="shrink-0 rounded border border-zinc-700 px-2 py-0.5 text-xs text-zinc-300 hover:bg-zinc-800 focus-visible:outline focus-visible:outline-2 focus-visible:outline-sky-400"
    >
      {state ?? "Copy"}
    </button>
  );
}
