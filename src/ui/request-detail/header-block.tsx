import { useState } from "react";
import type { HighlightTerms } from "~/lib/filter/search.ts";
import { Marked } from "./marked.tsx";
import { useCopy } from "./use-copy.ts";

/** Headers as the wire had them, one `Name: value` per line. */
export function rawHeaders(headers: ReadonlyArray<[string, string]>): string {
  return headers.map(([name, value]) => `${name}: ${value}`).join("\n");
}

/**
 * One side's headers with their count, as a table or as the raw lines, and a button that copies them. `highlight`:
 * texts looked for in the values of the header named (any header for "").
 */
export function HeaderBlock({
  label,
  headers,
  highlight = [],
}: {
  label: string;
  headers: Array<[string, string]>;
  highlight?: HighlightTerms["headers"];
}) {
  const [isRaw, setRaw] = useState(false);
  const { copiedKey, failedKey, copy } = useCopy();
  return (
    <div>
      <div className="mb-1 flex flex-wrap items-center gap-1.5 text-xs">
        <h4 className="font-medium text-zinc-300">
          {label} <span className="text-zinc-500">({headers.length})</span>
        </h4>
        {headers.length > 0 ? (
          <>
            <button
              type="button"
              aria-pressed={isRaw}
              onClick={() => setRaw(!isRaw)}
              className={`ml-auto rounded-md border border-zinc-700 px-2 py-0.5 font-medium ${isRaw ? "bg-zinc-700 text-zinc-100" : "bg-zinc-900 text-zinc-400 hover:bg-zinc-800"}`}
            >
              Raw
            </button>
            <button
              type="button"
              onClick={() => copy("headers", rawHeaders(headers))}
              className="rounded-md border border-zinc-700 bg-zinc-800 px-2 py-0.5 font-medium text-zinc-100 hover:bg-zinc-700"
            >
              {copiedKey ? "Copied!" : failedKey ? "Copy failed" : `Copy ${label.toLowerCase()}`}
            </button>
          </>
        ) : null}
      </div>
      {isRaw ? (
        <section aria-label={`${label}, raw`}>
          <pre className="max-h-96 overflow-auto rounded-md bg-zinc-950 p-2 font-mono text-xs break-all whitespace-pre-wrap text-zinc-200">
            {rawHeaders(headers)}
          </pre>
        </section>
      ) : (
        <KeyValueTable label={label} rows={headers} highlight={highlight} />
      )}
    </div>
  );
}

/**
 * Name/value rows as a table. `isProse`: values are words (wrapped between them), not tokens (broken anywhere).
 * `highlight`: texts looked for in the values of the row named (any row for "").
 */
export function KeyValueTable({
  label,
  rows,
  isProse = false,
  highlight = [],
  empty = "No headers",
}: {
  label: string;
  rows: ReadonlyArray<readonly [string, string]>;
  isProse?: boolean;
  highlight?: HighlightTerms["headers"];
  empty?: string;
}) {
  if (rows.length === 0) return <p className="text-xs text-zinc-500">{empty}</p>;
  return (
    <table aria-label={label} className="w-full table-fixed font-mono text-xs">
      <tbody>
        {rows.map(([name, value], i) => (
          // biome-ignore lint/suspicious/noArrayIndexKey: rows repeat; their order is the identity
          <tr key={i} className="align-top">
            <td className="w-[38%] py-0.5 pr-2 [overflow-wrap:anywhere] text-zinc-400 @lg:w-1/3">{name}</td>
            <td className={`py-0.5 text-zinc-200 ${isProse ? "[overflow-wrap:anywhere]" : "break-all"}`}>
              <Marked text={value} terms={highlight.filter((h) => h.name === "" || h.name === name.toLowerCase()).map((h) => h.text)} />
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
