import { dbOutcome, dbSystemName, isDbError } from "~/lib/db-call.ts";
import { formatBytes } from "~/lib/format.ts";
import type { TracedEvent } from "~/lib/protocol/event.ts";
import { sqlTokens } from "./sql-tokens.ts";

const tokenClass: Record<string, string> = {
  keyword: "text-violet-300 font-semibold",
  string: "text-emerald-300",
  number: "text-amber-300",
  placeholder: "text-sky-300",
  comment: "text-zinc-500 italic",
  text: "text-zinc-200",
};

/**
 * A database call's own detail: the statement (highlighted, always as text), its parameters, what it returned or the
 * error, and where it went. The parent request is shown by the request detail around it.
 */
export function DbCallDetail({ event }: { event: TracedEvent }) {
  const isRedis = event.db_system === "redis";
  const facts: Array<[string, string]> = [
    ["system", dbSystemName(event.db_system)],
    ["operation", event.db_operation],
    [isRedis ? "database index" : "database", event.db_name],
    ["user", event.db_user],
    ["rows", event.db_rows >= 0 ? String(event.db_rows) : ""],
    ["result", dbOutcome(event)],
    ["server", event.http_server_addr],
    ["bytes", `${formatBytes(event.bytes_sent)} sent, ${formatBytes(event.bytes_received)} received`],
    ["prepared statement", event.tags?.prepared ?? ""],
    ["parent", event.tags?.parent_guess ? `a guess: ${event.tags.parent_guess}` : ""],
  ];
  return (
    <div className="space-y-3" data-testid="db-call">
      {isDbError(event) ? (
        <p role="alert" className="rounded border border-red-500/40 bg-red-500/10 p-2 font-mono text-xs break-words text-red-300">
          {event.db_error_code ? <span className="mr-2 font-semibold">{event.db_error_code}</span> : null}
          {event.db_error_message}
        </p>
      ) : null}
      <div>
        <h4 className="mb-1 text-[11px] text-zinc-500">{isRedis ? "Command" : "Statement"}</h4>
        <pre
          data-testid="statement"
          className="max-h-72 overflow-auto rounded bg-zinc-950 p-2 font-mono text-xs whitespace-pre-wrap [overflow-wrap:anywhere]"
        >
          {sqlTokens(event.db_statement, isRedis).map((token, i) => (
            // biome-ignore lint/suspicious/noArrayIndexKey: tokens are the statement in order; position is the identity
            <span key={i} className={tokenClass[token.kind]}>
              {token.text}
            </span>
          ))}
        </pre>
        {event.db_statement_normalized && event.db_statement_normalized !== event.db_statement ? (
          <p className="mt-1 font-mono text-[11px] break-all text-zinc-500" title="Literals replaced: the same query groups under this">
            {event.db_statement_normalized}
          </p>
        ) : null}
      </div>
      <div>
        <h4 className="mb-1 text-[11px] text-zinc-500">Parameters</h4>
        {event.db_parameters.length === 0 ? (
          <p className="text-xs text-zinc-500">None sent apart from the statement.</p>
        ) : (
          <table aria-label="Parameters" className="w-full table-fixed font-mono text-xs">
            <tbody>
              {event.db_parameters.map(([name, value]) => (
                <tr key={name} className="align-top">
                  <td className="w-16 py-0.5 pr-2 text-sky-300">{name}</td>
                  <td className="py-0.5 break-all text-zinc-200">{value}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </div>
      <table aria-label="Call" className="w-full table-fixed font-mono text-xs">
        <tbody>
          {facts
            .filter(([, value]) => value !== "")
            .map(([name, value]) => (
              <tr key={name} className="align-top">
                <td className="w-[38%] py-0.5 pr-2 text-zinc-400 @lg:w-1/3">{name}</td>
                <td className="py-0.5 [overflow-wrap:anywhere] text-zinc-200">{value}</td>
              </tr>
            ))}
        </tbody>
      </table>
    </div>
  );
}
