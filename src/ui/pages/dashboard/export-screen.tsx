import { type FormEvent, useCallback, useEffect, useState } from "react";
import type { OtlpExportResponse, OtlpHeader, OtlpProtocol, SendOtlpTestSpanResponse } from "~/lib/protocol/api/otlp.ts";
import { Button } from "~/ui/components/button.tsx";
import { Spinner } from "~/ui/components/spinner.tsx";
import { ApiError, api, describeError, isAbortError } from "~/ui/lib/api.ts";
import { formatDate } from "~/ui/lib/format.ts";
import { type DashboardNamespace, useDashboard } from "~/ui/pages/dashboard/dashboard-state.ts";
import { DashboardIndex } from "~/ui/pages/dashboard/live-screen.tsx";
import { Screen, SectionTitle } from "~/ui/pages/dashboard/screen.tsx";

export function ExportScreen() {
  const { namespace } = useDashboard();
  if (!namespace) return <DashboardIndex />;
  return <ExportOfNamespace key={namespace.namespaceId} namespace={namespace} />;
}

const inputClass =
  "w-full min-w-0 rounded-md border border-zinc-800 bg-zinc-900 px-3 py-2 text-sm text-zinc-100 placeholder:text-zinc-500 focus:border-zinc-600 focus:outline-none";

/** "Name: value" lines as headers, or the first line that is not one. */
export function parseHeaderLines(text: string): { headers: OtlpHeader[] } | { error: string } {
  const headers: OtlpHeader[] = [];
  for (const [i, raw] of text.split("\n").entries()) {
    const line = raw.trim();
    if (!line) continue;
    const colon = line.indexOf(":");
    if (colon <= 0) return { error: `line ${i + 1} is not "Name: value"` };
    headers.push({ name: line.slice(0, colon).trim(), value: line.slice(colon + 1).trim() });
  }
  return { headers };
}

function ExportOfNamespace({ namespace }: { namespace: DashboardNamespace }) {
  const { namespaceId, name } = namespace;
  const [answer, setAnswer] = useState<OtlpExportResponse | null>(null);
  const [loadError, setLoadError] = useState<string | null>(null);
  const [endpoint, setEndpoint] = useState("");
  const [protocol, setProtocol] = useState<OtlpProtocol>("http/protobuf");
  const [isEnabled, setIsEnabled] = useState(true);
  const [isReplacingHeaders, setIsReplacingHeaders] = useState(false);
  const [headerText, setHeaderText] = useState("");
  const [formError, setFormError] = useState<string | null>(null);
  const [isSaving, setIsSaving] = useState(false);
  const [notice, setNotice] = useState<string | null>(null);
  const [test, setTest] = useState<SendOtlpTestSpanResponse | { error: string } | null>(null);
  const [isTesting, setIsTesting] = useState(false);

  const show = useCallback((next: OtlpExportResponse) => {
    setAnswer(next);
    setEndpoint(next.settings?.endpoint ?? "");
    setProtocol(next.settings?.protocol ?? "http/protobuf");
    setIsEnabled(next.settings?.isEnabled ?? true);
    setIsReplacingHeaders(!next.settings || next.settings.headerNames.length === 0);
    setHeaderText("");
  }, []);

  useEffect(() => {
    const controller = new AbortController();
    api("GetOtlpExport", { namespaceId }, { signal: controller.signal })
      .then(show)
      .catch((err: unknown) => {
        if (isAbortError(err)) return;
        setLoadError(
          err instanceof ApiError && err.status === 403
            ? "Only admins of this namespace can see or change where its spans go."
            : describeError(err).message,
        );
      });
    return () => controller.abort();
  }, [namespaceId, show]);

  // The counts move while traffic flows: read them again now and then.
  const hasAnswer = answer !== null;
  useEffect(() => {
    if (!hasAnswer) return;
    const timer = setInterval(() => {
      api("GetOtlpExport", { namespaceId })
        .then((next) => setAnswer((current) => (current ? { ...current, stats: next.stats, destination: next.destination } : next)))
        .catch(() => {});
    }, 5000);
    return () => clearInterval(timer);
  }, [hasAnswer, namespaceId]);

  async function save(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    setFormError(null);
    setNotice(null);
    let headers: OtlpHeader[] | undefined;
    if (isReplacingHeaders) {
      const parsed = parseHeaderLines(headerText);
      if ("error" in parsed) {
        setFormError(`Headers: ${parsed.error}`);
        return;
      }
      headers = parsed.headers;
    }
    setIsSaving(true);
    try {
      show(await api("SaveOtlpExport", { namespaceId, endpoint: endpoint.trim(), protocol, isEnabled, headers }));
      setNotice("Saved. New requests use these settings.");
    } catch (err) {
      if (!isAbortError(err)) setFormError(describeError(err).message);
    } finally {
      setIsSaving(false);
    }
  }

  async function remove() {
    setFormError(null);
    setNotice(null);
    try {
      await api("DeleteOtlpExport", { namespaceId });
      show(await api("GetOtlpExport", { namespaceId }));
      setNotice("Removed. This namespace follows the server's settings again.");
    } catch (err) {
      if (!isAbortError(err)) setFormError(describeError(err).message);
    }
  }

  async function sendTestSpan() {
    setIsTesting(true);
    setTest(null);
    try {
      setTest(await api("SendOtlpTestSpan", { namespaceId }));
    } catch (err) {
      if (!isAbortError(err)) setTest({ error: describeError(err).message });
    } finally {
      setIsTesting(false);
    }
  }

  return (
    <Screen
      title="OpenTelemetry export"
      description={
        <>
          Send the requests of <span className="text-zinc-200">{name}</span> as spans to your tracing backend (Jaeger, Tempo, Honeycomb,
          Datadog, any OTLP/HTTP collector). Bodies stay in Tapscope; each span links back to its request.
        </>
      }
    >
      {loadError ? (
        <p role="alert" className="text-sm text-zinc-400">
          {loadError}
        </p>
      ) : answer === null ? (
        <div className="flex items-center gap-2 text-sm text-zinc-500">
          <Spinner className="size-3.5" /> Loading…
        </div>
      ) : (
        <>
          <Status answer={answer} />
          <section aria-label="This namespace's collector">
            <SectionTitle title="This namespace's collector" />
            <form onSubmit={save} className="flex max-w-2xl flex-col gap-4">
              <label className="flex flex-col gap-1.5 text-sm text-zinc-300">
                Endpoint
                <input
                  type="url"
                  inputMode="url"
                  placeholder="https://otlp.example.com (or …/v1/traces)"
                  value={endpoint}
                  onChange={(e) => setEndpoint(e.target.value)}
                  className={inputClass}
                />
                <span className="text-xs text-zinc-500">The collector's OTLP/HTTP address; /v1/traces is added unless it is there.</span>
              </label>
              <div className="flex flex-wrap items-center gap-x-6 gap-y-3">
                <label className="flex items-center gap-2 text-sm text-zinc-300">
                  Protocol
                  <select
                    value={protocol}
                    onChange={(e) => setProtocol(e.target.value === "http/json" ? "http/json" : "http/protobuf")}
                    className="rounded-md border border-zinc-800 bg-zinc-900 px-2 py-1.5 text-sm text-zinc-100"
                  >
                    <option value="http/protobuf">http/protobuf</option>
                    <option value="http/json">http/json</option>
                  </select>
                </label>
                <label className="flex items-center gap-2 text-sm text-zinc-300">
                  <input
                    type="checkbox"
                    checked={isEnabled}
                    onChange={(e) => setIsEnabled(e.target.checked)}
                    className="size-4 accent-zinc-100"
                  />
                  Send spans
                </label>
              </div>
              <fieldset className="flex flex-col gap-2">
                <legend className="mb-1.5 text-sm text-zinc-300">Headers</legend>
                {answer.settings && answer.settings.headerNames.length > 0 ? (
                  <ul aria-label="Stored headers" className="flex flex-col gap-1">
                    {answer.settings.headerNames.map((header) => (
                      <li key={header} className="truncate font-mono text-xs text-zinc-400">
                        {header}: <span className="text-zinc-600">•••••••• (stored, never shown)</span>
                      </li>
                    ))}
                  </ul>
                ) : null}
                {answer.settings && !answer.settings.areHeadersReadable ? (
                  <p className="text-xs text-amber-400">The stored headers can no longer be read: enter them again.</p>
                ) : null}
                {answer.settings && answer.settings.headerNames.length > 0 ? (
                  <label className="flex items-center gap-2 text-sm text-zinc-400">
                    <input
                      type="checkbox"
                      checked={isReplacingHeaders}
                      onChange={(e) => setIsReplacingHeaders(e.target.checked)}
                      className="size-4 accent-zinc-100"
                    />
                    Replace the stored headers
                  </label>
                ) : null}
                {isReplacingHeaders ? (
                  <textarea
                    aria-label="Headers, one per line"
                    rows={3}
                    spellCheck={false}
                    autoComplete="off"
                    placeholder={"x-honeycomb-team: your-api-key\nAuthorization: Bearer …"}
                    value={headerText}
                    onChange={(e) => setHeaderText(e.target.value)}
                    className={`${inputClass} font-mono text-xs`}
                  />
                ) : null}
              </fieldset>
              {formError ? (
                <p role="alert" className="text-sm text-red-400">
                  {formError}
                </p>
              ) : null}
              {notice ? (
                <p role="status" className="text-sm text-emerald-400">
                  {notice}
                </p>
              ) : null}
              <div className="flex flex-wrap gap-2">
                <Button type="submit" disabled={isSaving}>
                  {isSaving ? <Spinner className="size-3.5" /> : null}
                  Save
                </Button>
                <Button variant="secondary" onClick={() => void sendTestSpan()} disabled={isTesting || answer.destination === "none"}>
                  {isTesting ? <Spinner className="size-3.5" /> : null}
                  Send a test span
                </Button>
                {answer.settings ? (
                  <Button variant="ghost" onClick={() => void remove()}>
                    Remove these settings
                  </Button>
                ) : null}
              </div>
              {test ? <TestResult result={test} /> : null}
            </form>
          </section>
        </>
      )}
    </Screen>
  );
}

function Status({ answer }: { answer: OtlpExportResponse }) {
  const { stats, destination } = answer;
  const where =
    destination === "namespace"
      ? `this namespace's collector, ${answer.settings?.endpoint ?? ""}`
      : destination === "server"
        ? `the server's collector, ${answer.serverDefault?.endpoint ?? ""}`
        : "nowhere: export is off";
  return (
    <section aria-label="Export status" className="rounded-lg border border-zinc-800 bg-zinc-900/40 p-4 text-sm">
      <p className="break-words text-zinc-300">
        Spans go to <span className="text-zinc-100">{where}</span>.
      </p>
      <dl className="mt-3 grid grid-cols-2 gap-x-6 gap-y-2 sm:grid-cols-5">
        <Count label="Exported" value={stats.exported} />
        <Count label="Queued" value={stats.queued} />
        <Count label="Dropped" value={stats.dropped} isBad={stats.dropped > 0} />
        <Count label="Failed" value={stats.failed} isBad={stats.failed > 0} />
        <Count label="Rejected" value={stats.rejected} isBad={stats.rejected > 0} />
      </dl>
      <p className="mt-3 text-xs text-zinc-500">
        {stats.lastExportTime ? `Last sent ${formatDate(stats.lastExportTime)}.` : "Nothing sent yet."} Counted by this server since it
        started.
      </p>
      {stats.lastError ? (
        <p className="mt-2 break-words text-xs text-amber-400">
          Last problem ({formatDate(stats.lastError.time)}): {stats.lastError.message}
        </p>
      ) : null}
    </section>
  );
}

function Count({ label, value, isBad = false }: { label: string; value: number; isBad?: boolean }) {
  return (
    <div>
      <dt className="text-xs text-zinc-500">{label}</dt>
      <dd className={`font-mono ${isBad ? "text-amber-400" : "text-zinc-100"}`}>{value.toLocaleString("en-US")}</dd>
    </div>
  );
}

function TestResult({ result }: { result: SendOtlpTestSpanResponse | { error: string } }) {
  if ("error" in result) {
    return (
      <p role="status" className="text-sm text-red-400">
        {result.error}
      </p>
    );
  }
  const answered = result.status === null ? "No answer" : `The collector answered ${result.status}`;
  return (
    <p role="status" className={`break-words text-sm ${result.isOk ? "text-emerald-400" : "text-red-400"}`}>
      {answered}: {result.message}{" "}
      <span className="text-zinc-500">
        ({result.durationMs} ms, trace {result.traceId})
      </span>
    </p>
  );
}
