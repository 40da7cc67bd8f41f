import { type ReactNode, useDeferredValue, useEffect, useMemo, useState } from "react";
import { formatBytes } from "~/lib/format.ts";
import { classifyBody, hexRows, mediaType, prettyJson } from "./body.ts";
import { JsonTree } from "./json-tree.tsx";
import { Marked } from "./marked.tsx";
import { useCopy } from "./use-copy.ts";

const MAX_HEX_ROWS = 4096;
const noTerms: readonly string[] = [];

/**
 * One captured body. Everything is rendered as React text nodes (or an <img> from a blob URL of a checked
 * raster type); captured bytes never become markup or an active document.
 */
export function BodyView({
  base64,
  contentType,
  isTruncated,
  wireSize,
  label,
  highlight = noTerms,
}: {
  base64: string;
  contentType: string;
  isTruncated: boolean;
  wireSize: number;
  label: string;
  /** Texts the filter looked for: marked in a text or JSON body. */
  highlight?: readonly string[];
}) {
  const view = useMemo(() => classifyBody(base64, contentType), [base64, contentType]);
  // A body the filter matched starts as text, where every match is marked; others as the JSON tree.
  const [isRaw, setRaw] = useState(highlight.length > 0);
  const [find, setFind] = useState("");
  const deferredFind = useDeferredValue(find.trim());
  const { copiedKey, failedKey, copy } = useCopy();
  const sampleSize =
    view.kind === "empty"
      ? 0
      : view.kind === "json" || view.kind === "text"
        ? new TextEncoder().encode(view.kind === "json" ? view.raw : view.text).length
        : view.bytes.length;
  const isText = view.kind === "json" || view.kind === "text";
  const isTree = view.kind === "json" && !isRaw && !deferredFind;
  // Pretty-printing a large body costs as much as parsing it: done only when the pretty text is shown.
  const pretty = useMemo(() => (view.kind === "json" && !isRaw && deferredFind ? prettyJson(view.value) : ""), [view, isRaw, deferredFind]);
  const shownText = view.kind === "json" ? (isRaw ? view.raw : pretty) : view.kind === "text" ? view.text : "";
  const terms = useMemo(() => (deferredFind ? [...highlight, deferredFind] : highlight), [highlight, deferredFind]);
  const found = useMemo(() => (deferredFind ? countMatches(shownText, deferredFind) : 0), [shownText, deferredFind]);
  const copyLabel = copiedKey
    ? "Copied!"
    : failedKey
      ? "Copy failed"
      : view.kind === "image" || view.kind === "binary"
        ? "Copy body (base64)"
        : "Copy body";

  return (
    <section aria-label={label} data-body-kind={view.kind}>
      {isTruncated ? (
        <p className="mb-1 text-xs text-amber-400" data-testid="truncated">
          Truncated: showing the first {formatBytes(view.kind === "empty" ? 0 : sampleSize)} of {formatBytes(wireSize)} on the wire
        </p>
      ) : null}
      {view.kind === "empty" ? null : (
        <div className="mb-1 flex flex-wrap items-center gap-1.5 text-xs">
          {view.kind === "json" ? (
            <div className="flex overflow-hidden rounded-md border border-zinc-700">
              <ToggleButton isOn={!isRaw} onClick={() => setRaw(false)}>
                Pretty
              </ToggleButton>
              <ToggleButton isOn={isRaw} onClick={() => setRaw(true)}>
                Raw
              </ToggleButton>
            </div>
          ) : null}
          {isText ? (
            <>
              <input
                type="search"
                value={find}
                onChange={(e) => setFind(e.target.value)}
                maxLength={MAX_FIND_CHARS}
                placeholder="Find in body"
                // Not "Find in response body": locators that look for the body by its label must find the body alone.
                aria-label={`Find in ${label.replace(/ body$/i, "").toLowerCase()}`}
                className="w-36 min-w-0 rounded-md border border-zinc-700 bg-zinc-950 px-2 py-0.5 text-zinc-100 placeholder:text-zinc-500"
              />
              {deferredFind ? (
                <span className="text-zinc-400" data-testid="find-count">
                  {found >= MAX_MARKS ? `${MAX_MARKS.toLocaleString("en-US")}+ matches` : found === 1 ? "1 match" : `${found} matches`}
                </span>
              ) : null}
            </>
          ) : null}
          <button
            type="button"
            onClick={() =>
              copy("body", view.kind === "image" || view.kind === "binary" ? base64 : view.kind === "json" ? view.raw : shownText)
            }
            className="rounded-md border border-zinc-700 bg-zinc-800 px-2 py-0.5 font-medium text-zinc-100 hover:bg-zinc-700"
          >
            {copyLabel}
          </button>
        </div>
      )}
      {view.kind === "empty" ? (
        <p className="text-xs text-zinc-500">{wireSize > 0 ? `No sample kept (${formatBytes(wireSize)} on the wire)` : "No body"}</p>
      ) : view.kind === "image" ? (
        <ImageBody bytes={view.bytes} contentType={view.contentType} />
      ) : view.kind === "binary" ? (
        <HexBody bytes={view.bytes} />
      ) : view.kind === "json" && isTree ? (
        <div className="max-h-96 overflow-auto rounded-md bg-zinc-950 p-2 text-zinc-200">
          <JsonTree value={view.value} terms={highlight} />
        </div>
      ) : (
        <>
          {mediaType(contentType) === "image/svg+xml" ? (
            <p className="mb-1 text-xs text-zinc-500" data-testid="svg-as-source">
              SVG image, shown as its source (captured markup is never rendered)
            </p>
          ) : null}
          <pre className="max-h-96 overflow-auto rounded-md bg-zinc-950 p-2 font-mono text-xs break-all whitespace-pre-wrap text-zinc-200">
            <Marked text={shownText} terms={terms} />
          </pre>
        </>
      )}
    </section>
  );
}

/** Find in body: a longer text is refused by the input, and at most this many matches are marked and counted. */
const MAX_FIND_CHARS = 200;
const MAX_MARKS = 1000;

/** Matches of `term` in `text` (any case), counted up to MAX_MARKS. */
function countMatches(text: string, term: string): number {
  const haystack = text.toLowerCase();
  const needle = term.toLowerCase();
  let count = 0;
  for (let at = haystack.indexOf(needle); at !== -1 && count < MAX_MARKS; at = haystack.indexOf(needle, at + needle.length)) count++;
  return count;
}

function ToggleButton({ isOn, onClick, children }: { isOn: boolean; onClick: () => void; children: ReactNode }) {
  return (
    <button
      type="button"
      aria-pressed={isOn}
      onClick={onClick}
      className={`px-2 py-0.5 font-medium ${isOn ? "bg-zinc-700 text-zinc-100" : "bg-zinc-900 text-zinc-400 hover:bg-zinc-800"}`}
    >
      {children}
    </button>
  );
}

function ImageBody({ bytes, contentType }: { bytes: Uint8Array; contentType: string }) {
  const [url, setUrl] = useState<string | null>(null);
  useEffect(() => {
    const objectUrl = URL.createObjectURL(new Blob([bytes as BlobPart], { type: contentType }));
    setUrl(objectUrl);
    return () => URL.revokeObjectURL(objectUrl);
  }, [bytes, contentType]);
  if (!url) return null;
  return (
    <div className="rounded-md bg-[repeating-conic-gradient(#27272a_0_25%,#18181b_0_50%)] bg-[length:16px_16px] p-2">
      <img src={url} alt={`Captured ${contentType} body`} className="max-h-80 max-w-full" />
    </div>
  );
}

function HexBody({ bytes }: { bytes: Uint8Array }) {
  const rows = useMemo(() => hexRows(bytes.subarray(0, MAX_HEX_ROWS * 16)), [bytes]);
  return (
    <div className="max-h-96 overflow-auto rounded-md bg-zinc-950 p-2 font-mono text-xs leading-5" data-testid="hex">
      {rows.map((row) => (
        <div key={row.offset} className="flex gap-4 whitespace-pre">
          <span className="text-zinc-500">{row.offset}</span>
          <span className="text-zinc-200">{row.hex}</span>
          <span className="text-zinc-400">{row.ascii}</span>
        </div>
      ))}
      {bytes.length > MAX_HEX_ROWS * 16 ? (
        <div className="text-zinc-500">… {formatBytes(bytes.length - MAX_HEX_ROWS * 16)} more</div>
      ) : null}
    </div>
  );
}
