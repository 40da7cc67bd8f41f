import { useCopy } from "../request-detail/use-copy.ts";

/** The short public URL of a link with copy-to-clipboard (checkmark for 2 seconds). */
export function ShareBox({ url }: { url: string }) {
  const { copiedKey, copy } = useCopy(2000);
  const isCopied = copiedKey === "share";
  return (
    <div className="flex items-center overflow-hidden rounded-lg border border-zinc-700 bg-zinc-900 text-sm">
      <span className="px-2 text-xs text-zinc-500">Share</span>
      <span data-testid="share-url" className="max-w-[22rem] truncate border-l border-zinc-800 px-2 py-1.5 font-mono text-xs text-zinc-200">
        {url.replace(/^https?:\/\//, "")}
      </span>
      <button
        type="button"
        aria-label={isCopied ? "Copied" : "Copy link"}
        onClick={() => copy("share", url)}
        className="border-l border-zinc-800 px-2.5 py-1.5 text-zinc-300 hover:bg-zinc-800"
      >
        {isCopied ? (
          <svg className="size-4 text-emerald-400" viewBox="0 0 20 20" fill="currentColor" aria-hidden="true" data-icon="check">
            <path
              fillRule="evenodd"
              d="M16.7 5.3a1 1 0 0 1 0 1.4l-8 8a1 1 0 0 1-1.4 0l-4-4a1 1 0 1 1 1.4-1.4L8 12.6l7.3-7.3a1 1 0 0 1 1.4 0z"
              clipRule="evenodd"
            />
          </svg>
        ) : (
          <svg className="size-4" viewBox="0 0 20 20" fill="currentColor" aria-hidden="true" data-icon="copy">
            <path d="M7 3a2 2 0 0 0-2 2v1H4a2 2 0 0 0-2 2v8a2 2 0 0 0 2 2h8a2 2 0 0 0 2-2v-1h1a2 2 0 0 0 2-2V5a2 2 0 0 0-2-2H7zm7 11V8a2 2 0 0 0-2-2H7V5h8v9h-1zM4 8h8v8H4V8z" />
          </svg>
        )}
      </button>
    </div>
  );
}
