import { useEffect, useMemo, useState } from "react";
import { eventUrl } from "~/lib/event-url.ts";
import { formatDuration } from "~/lib/format.ts";
import type { GetReplayAvailabilityResponse, ResendRequestResponse } from "~/lib/protocol/api/replay.ts";
import type { TracedEvent } from "~/lib/protocol/event.ts";
import { api, describeError } from "~/ui/lib/api.ts";
import { statusClass } from "../live/format.ts";
import { asText, decodeBase64 } from "./body.ts";

/** Headers the run sets itself (framing, the connection, the original's Host): not offered for editing. */
const notEdited = new Set([
  "host",
  "content-length",
  "transfer-encoding",
  "connection",
  "keep-alive",
  "proxy-connection",
  "upgrade",
  "te",
  "trailer",
]);

/** What a redacted capture holds in place of a secret: "[redacted]", or a "sha256:…" hash with --redact hash. */
const redactedPattern = /\[redacted\]|sha256:[0-9a-f]{16}/;

function headersText(event: TracedEvent): string {
  return event.http_req_headers
    .filter(([name]) => !name.startsWith(":") && !notEdited.has(name.toLowerCase()))
    .map(([name, value]) => `${name}: ${value}`)
    .join("\n");
}

/** "Name: value" lines back to pairs; a line without a colon is refused with its number. */
export function parseHeaderLines(text: string): { headers: Array<[string, string]> } | { error: string } {
  const headers: Array<[string, string]> = [];
  const lines = text.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!.replace(/\r$/, "");
    if (line.trim() === "") continue;
    const colon = line.indexOf(":", 1);
    if (colon === -1) return { error: `Header line ${i + 1} has no "name: value"` };
    headers.push([line.slice(0, colon).trim(), line.slice(colon + 1).trim()]);
  }
  return { headers };
}

function pathOf(event: TracedEvent): string {
  return event.http_req_path || "/";
}

function base64OfText(text: string): string {
  const bytes = new TextEncoder().encode(text);
  let binary = "";
  for (let i = 0; i < bytes.length; i += 0x8000) binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(binary);
}

/** A body as text, JSON pretty-printed. */
function shownBody(base64: string, isTruncated: boolean): string {
  const text = asText(decodeBase64(base64));
  if (text === null) return "(binary body)";
  let shown = text;
  try {
    shown = JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    // not JSON: as it came
  }
  return isTruncated ? `${shown}\n…(cut)` : shown;
}

type Availability = { state: "loading" } | { state: "known"; value: GetReplayAvailabilityResponse } | { state: "failed"; message: string };

/**
 * Resend: edit the method, path and query, headers and body of a captured request and send it again through a
 * `tapscope run --allow-replay` of the namespace; the response shows beside the original's (side by side when the
 * detail is wide, stacked on a phone). Where it goes is the original's, chosen by the server, never here.
 */
export function ResendPanel({
  event,
  namespaceId,
  onCopyCurl,
  curlLabel,
  onClose,
}: {
  event: TracedEvent;
  namespaceId: string;
  onCopyCurl: (() => void) | null;
  curlLabel: string;
  onClose: () => void;
}) {
  const [availability, setAvailability] = useState<Availability>({ state: "loading" });
  const [method, setMethod] = useState(event.http_req_method || "GET");
  const [path, setPath] = useState(pathOf(event));
  const [headers, setHeaders] = useState(() => headersText(event));
  const originalBody = useMemo(() => asText(decodeBase64(event.http_req_body)), [event.http_req_body]);
  const [body, setBody] = useState(originalBody ?? "");
  const [isSending, setIsSending] = useState(false);
  const [result, setResult] = useState<ResendRequestResponse | null>(null);
  const [error, setError] = useState<string | null>(null);
  const hasRedacted = redactedPattern.test(`${event.http_req_path}\n${headers}\n${body}`);

  useEffect(() => {
    const abort = new AbortController();
    api("GetReplayAvailability", { namespaceId }, { signal: abort.signal })
      .then((value) => setAvailability({ state: "known", value }))
      .catch((err: unknown) => {
        if (!abort.signal.aborted) setAvailability({ state: "failed", message: describeError(err).message });
      });
    return () => abort.abort();
  }, [namespaceId]);

  async function send() {
    const parsed = parseHeaderLines(headers);
    if ("error" in parsed) {
      setError(parsed.error);
      return;
    }
    setIsSending(true);
    setError(null);
    try {
      setResult(
        await api("ResendRequest", {
          namespaceId,
          eventId: event.event_id,
          method: method.trim(),
          path: path.trim(),
          headers: parsed.headers,
          body: base64OfText(body),
        }),
      );
    } catch (err) {
      setResult(null);
      setError(describeError(err).message);
    } finally {
      setIsSending(false);
    }
  }

  const cannot =
    availability.state === "failed"
      ? availability.message
      : availability.state === "known" && !availability.value.canResend
        ? availability.value.reason
        : null;
  const field = "w-full rounded-md border border-zinc-700 bg-zinc-950 px-2 py-1 font-mono text-xs text-zinc-100";

  return (
    <section aria-label="Resend" className="space-y-2 rounded-md border border-violet-500/40 bg-zinc-950/60 p-2">
      <div className="flex items-center gap-2">
        <h3 className="flex-1 text-xs font-semibold tracking-wide text-violet-300 uppercase">Resend</h3>
        <button type="button" onClick={onClose} className="rounded px-1.5 text-xs text-zinc-400 hover:bg-zinc-800">
          Close
        </button>
      </div>
      {availability.state === "loading" ? <p className="text-xs text-zinc-500">Looking for a run that allows replays…</p> : null}
      {cannot ? (
        <div className="space-y-1.5" data-testid="resend-unavailable">
          <p className="text-xs text-amber-300">{cannot}</p>
          {onCopyCurl ? (
            <button
              type="button"
              onClick={onCopyCurl}
              className="rounded-md border border-zinc-700 bg-zinc-800 px-2.5 py-1 text-xs font-medium text-zinc-100 hover:bg-zinc-700"
            >
              {curlLabel}
            </button>
          ) : null}
        </div>
      ) : null}
      {availability.state === "known" && availability.value.canResend ? (
        // Sent by the button's click: the live frame's sandbox blocks form submission (Enter in a field included).
        <form
          aria-label="Resend this request"
          onSubmit={(e) => {
            e.preventDefault();
            void send();
          }}
          className="space-y-2"
        >
          <p className="text-xs break-all text-zinc-500">
            To {event.http_is_outgoing ? "the host it called" : "the program's own address"}: {eventUrl(event)}
          </p>
          {hasRedacted ? (
            <p className="text-xs text-amber-300" data-testid="resend-redacted">
              Some values were redacted when captured: the replay sends them as shown here, so put the real ones in.
            </p>
          ) : null}
          <div className="flex gap-2">
            <label className="w-24 shrink-0 text-xs text-zinc-400">
              Method
              <input value={method} onChange={(e) => setMethod(e.target.value)} maxLength={32} className={field} />
            </label>
            <label className="min-w-0 flex-1 text-xs text-zinc-400">
              Path and query
              <input value={path} onChange={(e) => setPath(e.target.value)} maxLength={8192} className={field} />
            </label>
          </div>
          <label className="block text-xs text-zinc-400">
            Headers
            <textarea value={headers} onChange={(e) => setHeaders(e.target.value)} rows={4} className={field} spellCheck={false} />
          </label>
          <label className="block text-xs text-zinc-400">
            Body
            <textarea value={body} onChange={(e) => setBody(e.target.value)} rows={4} className={field} spellCheck={false} />
          </label>
          {originalBody === null ? (
            <p className="text-xs text-amber-300">The original body is binary: only a text body can be sent from here.</p>
          ) : null}
          <div className="flex items-center gap-2">
            <button
              type="button"
              onClick={() => void send()}
              disabled={isSending}
              className="rounded-md bg-violet-600 px-3 py-1 text-xs font-semibold text-white hover:bg-violet-500 disabled:opacity-50"
            >
              {isSending ? "Sending…" : "Send"}
            </button>
            {error ? (
              <p role="alert" className="text-xs text-red-400">
                {error}
              </p>
            ) : null}
          </div>
        </form>
      ) : null}
      {result ? (
        <div className="grid gap-2 @md:grid-cols-2">
          <ResponseColumn
            testId="resend-original"
            title="Original"
            status={event.http_resp_status_code}
            note={formatDuration(event.http_duration)}
            body={shownBody(event.http_resp_body, event.http_resp_body_truncated)}
          />
          <ResponseColumn
            testId="resend-result"
            title="Resent"
            status={result.status}
            note={`${formatDuration(result.durationUs)} · ${result.sentTo}`}
            body={shownBody(result.body, result.isBodyTruncated)}
          />
        </div>
      ) : null}
    </section>
  );
}

function ResponseColumn({
  testId,
  title,
  status,
  note,
  body,
}: {
  testId: string;
  title: string;
  status: number;
  note: string;
  body: string;
}) {
  return (
    <div data-testid={testId} className="min-w-0 rounded-md border border-zinc-800 p-2">
      <p className="text-xs text-zinc-400">
        {title} <span className={`font-mono font-semibold ${statusClass(status)}`}>{status || "—"}</span> · {note}
      </p>
      <pre className="mt-1 max-h-64 overflow-auto font-mono text-xs break-all whitespace-pre-wrap text-zinc-200">{body}</pre>
    </div>
  );
}
