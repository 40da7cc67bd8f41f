import type { FilterOp } from "./ast.ts";
import { type FilterFieldSpec, filterFieldList, filterFields, keyOf, operatorsOf } from "./fields.ts";

/**
 * Autocomplete for the filter input: from the text typed so far, what the last condition can go on with: a field, an
 * operator of that field, or a value (the field's own values, the usual methods and statuses, and values seen in the
 * events on screen). Works on the text before the cursor only, so it never has to understand a whole expression.
 */
export type Completion = {
  /** What the list shows. */
  label: string;
  /** A few words beside it. */
  detail: string;
  /** The draft with this completion taken. */
  text: string;
};

/** Values seen in the events on screen, by field name (`service`, `request.host`). */
export type KnownValues = Readonly<Record<string, readonly string[]>>;

export const maxCompletions = 8;

const methods = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"];
const statuses = ["200", "201", "204", "301", "302", "304", "400", "401", "403", "404", "409", "422", "429", "500", "502", "503", "504"];
const headerNames = ["content-type", "authorization", "x-request-id", "user-agent", "accept", "cookie", "traceparent", "location"];

const opAbout: Partial<Record<FilterOp, string>> = {
  contains: "holds the text",
  icontains: "holds the text, any case",
  matches: "matches a regular expression",
  startsWith: "begins with",
  endsWith: "ends with",
  exists: "is present",
};

/** Where the condition being typed starts: after the last `&&`, `||`, `(` or `!` outside a string. */
function conditionStart(text: string): number {
  let start = 0;
  let quote: string | null = null;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i]!;
    if (quote) {
      if (ch === "\\") i++;
      else if (ch === quote) quote = null;
      continue;
    }
    if (ch === '"' || ch === "'") quote = ch;
    else if ((ch === "&" || ch === "|") && text[i + 1] === ch) {
      start = i + 2;
      i++;
    } else if (ch === "(" || (ch === "!" && text[i + 1] !== "=")) start = i + 1;
  }
  return start;
}

const quoted = (value: string) => JSON.stringify(value);

function valuesOf(spec: FilterFieldSpec, known: KnownValues): string[] {
  if (spec.kind === "enum" || spec.kind === "flag") return spec.kind === "flag" ? ["true", "false"] : [...(spec.values ?? [])];
  if (spec.kind === "method") return methods;
  if (spec.kind === "status") return statuses;
  return [...(known[spec.name] ?? [])];
}

/** The completions of `draft` (the text before the cursor), at most maxCompletions, best first. */
export function completeFilter(draft: string, known: KnownValues = {}): Completion[] {
  const start = conditionStart(draft);
  const head = draft.slice(0, start);
  const tail = draft.slice(start);
  const lead = /^\s*/.exec(tail)![0];
  const before = head + lead;
  const condition = tail.slice(lead.length);

  // A field name being typed.
  const fieldTyped = /^[A-Za-z_.]*$/.exec(condition);
  if (fieldTyped) {
    const prefix = condition.toLowerCase();
    const starts = filterFieldList.filter((f) => f.name.startsWith(prefix));
    const inside = prefix ? filterFieldList.filter((f) => !f.name.startsWith(prefix) && f.name.includes(prefix)) : [];
    return [...starts, ...inside]
      .filter((f) => f.name !== condition || keyOf(f) !== "none")
      .slice(0, maxCompletions)
      .map((f) => ({
        label: f.name,
        detail: f.about,
        text: `${before}${f.name}${keyOf(f) === "required" ? '["' : " "}`,
      }));
  }

  const named = /^([A-Za-z_.]+)(\s*\[\s*)?/.exec(condition)!;
  const spec = filterFields.get(named[1]!);
  if (!spec) return [];
  let rest = condition.slice(named[0].length);
  let isKeyed = false;
  let fieldText = named[1]!;

  if (named[2] !== undefined) {
    // A header name or tag key in brackets.
    const key = /^"([^"]*)("\s*\]?)?/.exec(rest);
    if (!key) return [];
    if (key[2] === undefined) {
      if (spec.kind !== "headers") return [];
      const prefix = key[1]!.toLowerCase();
      return headerNames
        .filter((h) => h.startsWith(prefix) && h !== prefix)
        .map((h) => ({ label: h, detail: "header", text: `${before}${named[1]}["${h}"] ` }));
    }
    if (!key[2].includes("]")) return [];
    isKeyed = true;
    fieldText = condition.slice(0, named[0].length + key[0].length);
    rest = rest.slice(key[0].length);
  }

  // An operator being typed (after the field and a space).
  const opTyped = /^(\s+)(\S*)$/.exec(rest);
  if (opTyped) {
    const prefix = opTyped[2]!.toLowerCase();
    return operatorsOf(spec, isKeyed)
      .filter((op) => op.toLowerCase().startsWith(prefix) && op.toLowerCase() !== prefix)
      .map((op) => ({
        label: op,
        detail: opAbout[op] ?? "",
        text: `${before}${fieldText.trimEnd()} ${op}${op === "exists" ? "" : " "}`,
      }));
  }

  // A value being typed (after the operator).
  const valueTyped = /^\s+(\S+)\s+("?)([^"]*)$/.exec(rest);
  if (!valueTyped) return [];
  const op = valueTyped[1]!;
  if (!operatorsOf(spec, isKeyed).some((o) => o.toLowerCase() === op.toLowerCase())) return [];
  const prefix = valueTyped[3]!.toLowerCase();
  const isNumber = spec.kind === "status" || spec.kind === "flag";
  return valuesOf(spec, known)
    .filter((v) => v.toLowerCase().startsWith(prefix) && v.toLowerCase() !== prefix)
    .slice(0, maxCompletions)
    .map((v) => ({
      label: v,
      detail: known[spec.name]?.includes(v) ? "seen" : spec.name,
      text: `${before}${fieldText.trimEnd()} ${op} ${isNumber ? v : quoted(v)}`,
    }));
}
