import { useState } from "react";
import { Marked } from "./marked.tsx";

/** Children shown under an opened node before a "show more" button: a huge array costs a page of rows, not all. */
export const CHILDREN_PAGE = 100;
/** Nodes opened when the tree first shows, level by level (a small body opens whole, a large one its top levels). */
export const INITIAL_OPEN_BUDGET = 300;
/** A longer string shows its start; the whole text is in the Raw view. */
export const MAX_STRING_CHARS = 2000;

type Container = Record<string, unknown> | unknown[];

function isContainer(value: unknown): value is Container {
  return typeof value === "object" && value !== null;
}

function entriesOf(value: Container): Array<[string, unknown]> {
  return Array.isArray(value) ? value.map((v, i) => [String(i), v]) : Object.entries(value);
}

function sizeOf(value: Container): number {
  return Array.isArray(value) ? value.length : Object.keys(value).length;
}

/**
 * How many levels open at first: the deepest level such that every node down to it, with at most a page of children
 * each, stays within the budget. Counting stops at the budget, so a 10 MB body is not walked.
 */
export function initialOpenDepth(root: unknown, budget = INITIAL_OPEN_BUDGET): number {
  let level: Container[] = isContainer(root) ? [root] : [];
  let shown = 1;
  let depth = 0;
  while (level.length > 0) {
    const next: Container[] = [];
    for (const node of level) {
      const children = entriesOf(node).slice(0, CHILDREN_PAGE);
      shown += children.length;
      if (shown > budget) return depth;
      for (const [, child] of children) if (isContainer(child)) next.push(child);
    }
    depth++;
    level = next;
  }
  return depth;
}

/**
 * A JSON value as a tree of rows: objects and arrays open and close, values are coloured by type. Every value is a
 * React text node (captured text never becomes markup); only opened nodes render their children, a page at a time.
 */
export function JsonTree({ value, terms = [] }: { value: unknown; terms?: readonly string[] }) {
  const [openDepth] = useState(() => initialOpenDepth(value));
  return (
    <ul aria-label="JSON tree" className="font-mono text-xs leading-5">
      <JsonNode name={null} value={value} depth={0} openDepth={openDepth} terms={terms} />
    </ul>
  );
}

function JsonNode({
  name,
  value,
  depth,
  openDepth,
  terms,
}: {
  name: string | null;
  value: unknown;
  depth: number;
  openDepth: number;
  terms: readonly string[];
}) {
  const [isOpen, setOpen] = useState(depth < openDepth);
  const [shown, setShown] = useState(CHILDREN_PAGE);
  const label = name === null ? null : <Key name={name} terms={terms} />;
  if (!isContainer(value))
    return (
      <li className="pl-4 [overflow-wrap:anywhere]">
        {label}
        <Scalar value={value} terms={terms} />
      </li>
    );
  const isArray = Array.isArray(value);
  const size = sizeOf(value);
  const summary = isArray ? `[${size}]` : `{${size}}`;
  const children = isOpen ? entriesOf(value).slice(0, shown) : [];
  return (
    <li>
      <button
        type="button"
        onClick={() => setOpen(!isOpen)}
        disabled={size === 0}
        aria-expanded={size > 0 ? isOpen : undefined}
        aria-label={`${isOpen ? "Close" : "Open"} ${name ?? "root"}`}
        className="flex w-full items-baseline rounded text-left hover:bg-zinc-800 disabled:hover:bg-transparent"
      >
        <span aria-hidden className="inline-block w-4 shrink-0 text-zinc-500">
          {size === 0 ? "" : isOpen ? "▾" : "▸"}
        </span>
        {label}
        <span className="text-zinc-500">{summary}</span>
      </button>
      {isOpen && size > 0 ? (
        <ul className="ml-2 border-l border-zinc-800 pl-1">
          {children.map(([key, child]) => (
            <JsonNode key={key} name={key} value={child} depth={depth + 1} openDepth={openDepth} terms={terms} />
          ))}
          {size > shown ? (
            <li className="pl-4">
              <button type="button" onClick={() => setShown(shown + CHILDREN_PAGE)} className="rounded px-1 text-sky-400 hover:bg-zinc-800">
                Show {Math.min(CHILDREN_PAGE, size - shown).toLocaleString("en-US")} more of {(size - shown).toLocaleString("en-US")}
              </button>
            </li>
          ) : null}
        </ul>
      ) : null}
    </li>
  );
}

function Key({ name, terms }: { name: string; terms: readonly string[] }) {
  return (
    <span className="mr-1 text-sky-300">
      <Marked text={name} terms={terms} />
      <span className="text-zinc-500">:</span>
    </span>
  );
}

function Scalar({ value, terms }: { value: unknown; terms: readonly string[] }) {
  if (typeof value === "string") {
    const cut = value.length > MAX_STRING_CHARS;
    // As JSON writes it: quotes and control characters escaped, so a value reads unambiguously.
    const literal = JSON.stringify(cut ? value.slice(0, MAX_STRING_CHARS) : value);
    return (
      <span className="text-emerald-300" data-json-type="string">
        <Marked text={cut ? literal.slice(0, -1) : literal} terms={terms} />
        {cut ? (
          <span className="text-zinc-500">… {(value.length - MAX_STRING_CHARS).toLocaleString("en-US")} more characters (see Raw)</span>
        ) : null}
      </span>
    );
  }
  if (typeof value === "number")
    return (
      <span className="text-amber-300" data-json-type="number">
        <Marked text={String(value)} terms={terms} />
      </span>
    );
  if (typeof value === "boolean")
    return (
      <span className="text-violet-300" data-json-type="boolean">
        {String(value)}
      </span>
    );
  return (
    <span className="text-zinc-400" data-json-type="null">
      null
    </span>
  );
}
