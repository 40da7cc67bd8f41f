import { useEffect, useMemo, useState } from "react";
import { formatBytes } from "~/lib/format.ts";
import { classifyBody, hexRows, mediaType } from "./body.ts";
import { Marked } from "./marked.tsx";

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
  const sampleSize =
    view.kind === "empty"
      ? 0
      : view.kind === "json" || view.kind === "text"
        ? new TextEncoder().encode(view.text).length
        : view.bytes.length;

  return (
    <section aria-label={label} data-body-kind={view.kind}>
      {isTruncated ? (
        <p className="mb-1 text-xs text-amber-400" data-testid="truncated">
          Truncated: showing the first {formatBytes(view.kind === "empty" ? 0 : sampleSize)} of {formatBytes(wireSize)} on the wire
        </p>
      ) : null}
      {view.kind === "empty" ? (
        <p className="text-xs text-zinc-500">{wireSize > 0 ? `No sample kept (${formatBytes(wireSize)} on the wire)` : "No body"}</p>
      ) : view.kind === "image" ? (
        <ImageBody bytes={view.bytes} contentType={view.contentType} />
      ) : view.kind === "binary" ? (
        <HexBody bytes={view.bytes} />
      ) : (
        <>
          {mediaType(contentType) === "image/svg+xml" ? (
            <p className="mb-1 text-xs text-zinc-500" data-testid="svg-as-source">
              SVG image, shown as its source (captured markup is never rendered)
            </p>
          ) : null}
          <pre className="max-h-96 overflow-auto rounded-md bg-zinc-950 p-2 font-mono text-xs break-all whitespace-pre-wrap text-zinc-200">
            <Marked text={view.text} terms={highlight} />
          </pre>
        </>
      )}
    </section>
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
