import { useState } from "react";
import { type Clause, numberClauseColumns, numberOps, stringClauseColumns, stringOps } from "~/lib/protocol/query.ts";
import type { TimeRange } from "~/lib/time/range.ts";
import { parseTypedUtc } from "~/lib/time/typed-time.ts";

const opLabel: Record<string, string> = {
  Equals: "=",
  NotEquals: "≠",
  GreaterThan: ">",
  GreaterThanOrEquals: "≥",
  LesserThan: "<",
  LesserThanOrEquals: "≤",
  DoesNotEqual: "≠",
  Like: "like",
  NotLike: "not like",
  After: "from",
  Before: "until",
};

const timestampOps = ["After", "Before"] as const;

const field = "rounded-md border border-zinc-700 bg-zinc-900 px-2 py-1 font-mono text-xs text-zinc-100";

export function clauseText(c: Clause): string {
  return `${c.column} ${opLabel[c.op]} ${c.type === "String" ? JSON.stringify(c.value) : c.value}`;
}

/**
 * Clause editing by column: Number and String operators, and the timestamp's lower and
 * upper bounds (which set the global range). Clauses show as removable chips.
 */
export function ClauseEditor({
  clauses,
  global,
  onClauses,
  onGlobal,
}: {
  clauses: Clause[];
  global: TimeRange;
  onClauses: (clauses: Clause[]) => void;
  onGlobal: (global: TimeRange) => void;
}) {
  const [column, setColumn] = useState<string>("http_resp_status_code");
  const [op, setOp] = useState<string>("Equals");
  const [value, setValue] = useState("");
  const kind = column === "time" ? "Timestamp" : (numberClauseColumns as readonly string[]).includes(column) ? "Number" : "String";
  const ops: readonly string[] = kind === "Timestamp" ? timestampOps : kind === "Number" ? numberOps : stringOps;
  const validOp = ops.includes(op) ? op : ops[0]!;

  const build = (): { clause?: Clause; global?: TimeRange } | null => {
    if (kind === "Number") {
      const n = Number(value);
      if (value.trim() === "" || !Number.isFinite(n)) return null;
      return {
        clause: {
          type: "Number",
          column: column as Clause["column"] as never,
          op: validOp as never,
          value: n,
        },
      };
    }
    if (kind === "String")
      return {
        clause: {
          type: "String",
          column: column as never,
          op: validOp as never,
          value,
        },
      };
    const t = parseTypedUtc(value);
    if (t === null) return null;
    if (validOp === "After") return t < global.endMs ? { global: { startMs: t, endMs: global.endMs } } : null;
    return t > global.startMs ? { global: { startMs: global.startMs, endMs: t } } : null;
  };
  const built = build();

  return (
    <div className="flex flex-wrap items-center gap-2">
      {clauses.map((c, i) => (
        <span
          // biome-ignore lint/suspicious/noArrayIndexKey: clauses may repeat; their position is what tells them apart
          key={`${clauseText(c)}-${i}`}
          className="inline-flex items-center rounded-md border border-violet-500/40 bg-violet-500/10 font-mono text-xs text-violet-100"
        >
          <span className="px-2 py-0.5">{clauseText(c)}</span>
          <button
            type="button"
            aria-label={`Remove clause ${clauseText(c)}`}
            className="px-1.5 text-violet-300 hover:text-white"
            onClick={() => onClauses(clauses.filter((_, j) => j !== i))}
          >
            ✕
          </button>
        </span>
      ))}
      <form
        className="flex w-full flex-wrap items-center gap-1 sm:w-auto"
        onSubmit={(e) => {
          e.preventDefault();
          if (!built) return;
          if (built.clause) onClauses([...clauses, built.clause]);
          if (built.global) onGlobal(built.global);
          setValue("");
        }}
      >
        <select
          aria-label="Column"
          className={`${field} max-w-full max-sm:flex-auto sm:min-w-0`}
          value={column}
          onChange={(e) => setColumn(e.target.value)}
        >
          <option value="time">time</option>
          <optgroup label="Number">
            {numberClauseColumns.map((c) => (
              <option key={c}>{c}</option>
            ))}
          </optgroup>
          <optgroup label="String">
            {stringClauseColumns.map((c) => (
              <option key={c}>{c}</option>
            ))}
          </optgroup>
        </select>
        <select
          aria-label="Operator"
          className={`${field} max-w-full max-sm:flex-auto sm:min-w-0`}
          value={validOp}
          onChange={(e) => setOp(e.target.value)}
        >
          {ops.map((o) => (
            <option key={o} value={o}>
              {opLabel[o]} ({o})
            </option>
          ))}
        </select>
        <input
          aria-label="Value"
          className={`${field} min-w-0 max-sm:flex-[1_1_12rem] sm:w-44`}
          value={value}
          placeholder={kind === "Timestamp" ? "YYYY-MM-DD HH:MM:SS (UTC)" : kind === "String" ? "text, % for any" : "number"}
          onChange={(e) => setValue(e.target.value)}
        />
        <button
          type="submit"
          disabled={!built}
          className="rounded-md border border-zinc-700 bg-zinc-900 px-2 py-1 text-xs text-zinc-200 hover:bg-zinc-800 disabled:opacity-40"
        >
          Add clause
        </button>
      </form>
    </div>
  );
}
