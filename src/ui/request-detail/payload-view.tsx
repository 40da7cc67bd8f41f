import { useMemo } from "react";
import type { TracedEvent } from "~/lib/protocol/event.ts";
import { type Fields, formFields, queryFields, requestCookies, responseCookies } from "./payload.ts";

/** What the request carried besides its headers, parsed: the query string, form fields, and cookies both ways. */
export function PayloadTables({ event }: { event: TracedEvent }) {
  // An explorer row may carry only some fields until its detail arrives.
  const query = useMemo(() => queryFields(event.http_req_path ?? ""), [event.http_req_path]);
  const form = useMemo(() => formFields(event), [event]);
  const sent = useMemo(() => requestCookies(event.http_req_headers ?? []), [event.http_req_headers]);
  return (
    <>
      {query.rows.length > 0 ? <FieldTable label="Query string" fields={query} /> : null}
      {form ? <FieldTable label="Form fields" fields={form} noteTitle="type" /> : null}
      {sent.rows.length > 0 ? <FieldTable label="Request cookies" fields={sent} /> : null}
      <ResponseCookies event={event} />
    </>
  );
}

/** The cookies the response set (Set-Cookie), with their attributes. */
function ResponseCookies({ event }: { event: TracedEvent }) {
  const set = useMemo(() => responseCookies(event.http_resp_headers ?? []), [event.http_resp_headers]);
  return set.rows.length > 0 ? <FieldTable label="Response cookies" fields={set} noteTitle="attributes" /> : null;
}

function FieldTable({ label, fields, noteTitle }: { label: string; fields: Fields; noteTitle?: string }) {
  const hasNotes = noteTitle !== undefined && fields.rows.some((r) => r.note);
  return (
    <div>
      <h4 className="mb-1 text-xs font-medium text-zinc-300">
        {label} <span className="text-zinc-500">({(fields.rows.length + fields.more).toLocaleString("en-US")})</span>
      </h4>
      <table aria-label={label} className="w-full table-fixed font-mono text-xs">
        <thead className="sr-only">
          <tr>
            <th>name</th>
            <th>value</th>
            {hasNotes ? <th>{noteTitle}</th> : null}
          </tr>
        </thead>
        <tbody>
          {fields.rows.map((row, i) => (
            // biome-ignore lint/suspicious/noArrayIndexKey: names repeat; their order is the identity
            <tr key={i} className="align-top">
              <td className="w-[38%] py-0.5 pr-2 [overflow-wrap:anywhere] text-zinc-400 @lg:w-1/3">{row.name}</td>
              <td className="py-0.5 break-all text-zinc-200">{row.value}</td>
              {hasNotes ? <td className="py-0.5 pl-2 [overflow-wrap:anywhere] text-zinc-500">{row.note ?? ""}</td> : null}
            </tr>
          ))}
        </tbody>
      </table>
      {fields.more > 0 ? <p className="text-xs text-zinc-500">… {fields.more.toLocaleString("en-US")} more not shown</p> : null}
    </div>
  );
}
