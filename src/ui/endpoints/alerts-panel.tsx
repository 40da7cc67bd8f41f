import { type FormEvent, useCallback, useEffect, useState } from "react";
import { formatDuration } from "~/lib/format.ts";
import type { AlertEndpoint, AlertMetric, AlertRule, AlertRuleInput, ListAlertsResponse } from "~/lib/protocol/api/endpoints.ts";
import type { EndpointRow } from "~/lib/protocol/query.ts";
import { Button } from "~/ui/components/button.tsx";
import { ErrorNotice } from "~/ui/components/error-notice.tsx";
import { api, describeError, type ErrorText } from "~/ui/lib/api.ts";
import { formatAge } from "~/ui/lib/format.ts";

const metricLabels: Record<AlertMetric, string> = {
  server_errors: "5xx rate above (%)",
  all_errors: "error rate (4xx and 5xx) above (%)",
  p95: "p95 above (ms)",
  p99: "p99 above (ms)",
};

const isPercent = (m: AlertMetric) => m === "server_errors" || m === "all_errors";

/** A measured value as the rule states it: a percentage, or a duration (the store's microseconds). */
function formatValue(metric: AlertMetric, value: number | null): string {
  if (value === null) return "—";
  return isPercent(metric) ? `${value.toFixed(1)}%` : formatDuration(value * 1000);
}

function describeRule(r: AlertRuleInput): string {
  const what = r.endpoint ? `${r.endpoint.method} ${r.endpoint.host}${r.endpoint.route}` : "all requests";
  const limit = isPercent(r.metric) ? `${r.threshold}%` : `${r.threshold} ms`;
  const metric = { server_errors: "5xx rate", all_errors: "error rate", p95: "p95", p99: "p99" }[r.metric];
  return `${what}${r.filterText ? ` matching ${r.filterText}` : ""}: ${metric} above ${limit} over ${r.windowMinutes} min (at least ${r.minRequests} requests)`;
}

/** The namespace's alert rules with their state, what fired and resolved, and every notification sent. */
export function AlertsPanel({
  namespaceId,
  endpoints,
  selfEmail,
}: {
  namespaceId: string;
  endpoints: readonly EndpointRow[];
  selfEmail: string;
}) {
  const [data, setData] = useState<ListAlertsResponse | null>(null);
  const [error, setError] = useState<ErrorText | null>(null);
  const [isEditing, setEditing] = useState(false);
  const [secret, setSecret] = useState<string | null>(null);

  const load = useCallback(async () => {
    try {
      setData(await api("ListAlerts", { namespaceId }));
      setError(null);
    } catch (err) {
      setError(describeError(err));
    }
  }, [namespaceId]);
  // The state changes on the server (an evaluation every minute or so): looked at again while the screen is open.
  useEffect(() => {
    void load();
    const timer = setInterval(() => void load(), 10_000);
    return () => clearInterval(timer);
  }, [load]);

  const remove = async (rule: AlertRule) => {
    if (!window.confirm(`Delete the alert "${rule.name}"?`)) return;
    try {
      await api("DeleteAlertRule", { namespaceId, ruleId: rule.ruleId });
      await load();
    } catch (err) {
      setError(describeError(err));
    }
  };

  return (
    <section aria-labelledby="alerts-heading" className="flex flex-col gap-3" data-testid="alerts">
      <div className="flex items-center justify-between gap-3">
        <h2 id="alerts-heading" className="text-base font-semibold text-zinc-100">
          Alerts
        </h2>
        {isEditing ? null : (
          <Button variant="secondary" onClick={() => setEditing(true)}>
            New alert
          </Button>
        )}
      </div>
      {error ? <ErrorNotice error={error} lead="Alerts:" /> : null}
      {secret ? (
        <div role="status" className="rounded-lg border border-emerald-500/30 bg-emerald-500/10 p-3 text-sm text-emerald-200">
          The webhook's signing secret, shown this once (each call's <code>x-tapscope-signature</code> header is an HMAC-SHA256 made with
          it; see the docs):{" "}
          <code className="break-all select-all" data-testid="webhook-secret">
            {secret}
          </code>
        </div>
      ) : null}
      {isEditing ? (
        <AlertForm
          namespaceId={namespaceId}
          endpoints={endpoints}
          selfEmail={selfEmail}
          onCancel={() => setEditing(false)}
          onSaved={(webhookSecret) => {
            setEditing(false);
            setSecret(webhookSecret);
            void load();
          }}
        />
      ) : null}
      {data && data.rules.length === 0 && !isEditing ? (
        <p className="text-sm text-zinc-500">
          No alerts yet. An alert watches an endpoint's error rate or latency and mails or calls a webhook when it fires and resolves.
        </p>
      ) : null}
      {data && data.rules.length > 0 ? (
        <ul className="flex flex-col gap-2">
          {data.rules.map((r) => (
            <li
              key={r.ruleId}
              data-rule={r.name}
              data-state={r.state}
              className="flex flex-wrap items-center gap-x-3 gap-y-1 rounded-lg border border-zinc-800 bg-zinc-950 px-3 py-2 text-sm"
            >
              <span
                className={`rounded px-1.5 py-0.5 text-[11px] font-semibold uppercase ${r.state === "firing" ? "bg-red-500/20 text-red-300" : "bg-emerald-500/15 text-emerald-300"}`}
              >
                {r.state}
              </span>
              <span className="font-medium text-zinc-100">{r.name}</span>
              <span className="min-w-0 basis-full text-xs break-words text-zinc-400 sm:basis-auto sm:flex-1">{describeRule(r)}</span>
              <span className="text-xs text-zinc-500">
                {r.lastEvaluatedAt
                  ? `now ${formatValue(r.metric, r.lastValue)} over ${r.lastRequests ?? 0} requests, ${formatAge(r.lastEvaluatedAt)}`
                  : "not evaluated yet"}
              </span>
              <Button variant="ghost" className="px-2 py-1 text-xs" onClick={() => void remove(r)}>
                Delete
              </Button>
            </li>
          ))}
        </ul>
      ) : null}
      {data && data.events.length > 0 ? (
        <div className="flex flex-col gap-1">
          <h3 className="text-sm font-semibold text-zinc-300">History</h3>
          <ul className="flex flex-col text-xs" data-testid="alert-history">
            {data.events.map((e) => {
              const rule = data.rules.find((r) => r.ruleId === e.ruleId);
              return (
                <li key={e.eventId} data-kind={e.kind} className="flex flex-wrap gap-x-3 border-t border-zinc-900 py-1 text-zinc-400">
                  <span className="font-mono text-zinc-500">{new Date(e.time).toISOString().replace("T", " ").slice(0, 19)}</span>
                  <span className={e.kind === "fired" ? "text-red-300" : "text-emerald-300"}>{e.kind}</span>
                  <span className="text-zinc-200">{e.ruleName}</span>
                  <span>
                    {rule ? formatValue(rule.metric, e.value) : (e.value ?? "—")} over {e.requests} requests
                  </span>
                </li>
              );
            })}
          </ul>
        </div>
      ) : null}
      {data && data.deliveries.length > 0 ? (
        <div className="flex flex-col gap-1">
          <h3 className="text-sm font-semibold text-zinc-300">Notifications</h3>
          <ul className="flex flex-col text-xs" data-testid="alert-deliveries">
            {data.deliveries.map((d) => (
              <li
                key={d.deliveryId}
                data-channel={d.channel}
                data-status={d.status}
                className="flex flex-wrap gap-x-3 border-t border-zinc-900 py-1 text-zinc-400"
              >
                <span className="font-mono text-zinc-500">{new Date(d.time).toISOString().replace("T", " ").slice(0, 19)}</span>
                <span>{d.channel === "email" ? "e-mail" : "webhook"}</span>
                <span className="min-w-0 truncate text-zinc-200">{d.target}</span>
                <span className={d.status === "sent" ? "text-emerald-300" : d.status === "failed" ? "text-red-300" : "text-amber-300"}>
                  {d.status}
                  {d.responseStatus !== null ? ` (HTTP ${d.responseStatus})` : ""}
                </span>
                <span>
                  {d.attempts} attempt{d.attempts === 1 ? "" : "s"}
                </span>
                {d.lastError ? <span className="text-red-300/80">{d.lastError}</span> : null}
                {d.status !== "sent" && d.status !== "failed" && d.nextAttemptAt ? (
                  <span>next try {formatAge(d.nextAttemptAt)}</span>
                ) : null}
              </li>
            ))}
          </ul>
        </div>
      ) : null}
    </section>
  );
}

const field = "rounded-md border border-zinc-700 bg-zinc-900 px-2 py-1.5 text-sm text-zinc-100";

function endpointKey(e: AlertEndpoint): string {
  return JSON.stringify([e.service, e.host, e.method, e.route]);
}

/** A new rule: on one endpoint of the table (or on every request), with a filter, a threshold and where to notify. */
function AlertForm({
  namespaceId,
  endpoints,
  selfEmail,
  onCancel,
  onSaved,
}: {
  namespaceId: string;
  endpoints: readonly EndpointRow[];
  selfEmail: string;
  onCancel: () => void;
  onSaved: (webhookSecret: string | null) => void;
}) {
  const [name, setName] = useState("");
  const [metric, setMetric] = useState<AlertMetric>("server_errors");
  const [threshold, setThreshold] = useState("5");
  const [windowMinutes, setWindow] = useState("5");
  const [minRequests, setMinRequests] = useState("10");
  const [endpoint, setEndpoint] = useState("");
  const [filterText, setFilterText] = useState("");
  const [emails, setEmails] = useState(selfEmail);
  const [webhookUrl, setWebhookUrl] = useState("");
  const [error, setError] = useState<ErrorText | null>(null);
  const [isSaving, setSaving] = useState(false);
  const choices = endpoints.filter((e) => e.route).map((e) => ({ service: e.service, host: e.host, method: e.method, route: e.route }));

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setSaving(true);
    setError(null);
    try {
      const answer = await api("SaveAlertRule", {
        namespaceId,
        rule: {
          name,
          metric,
          threshold: Number(threshold),
          windowMinutes: Number(windowMinutes),
          minRequests: Number(minRequests),
          endpoint: choices.find((c) => endpointKey(c) === endpoint) ?? null,
          filterText,
          emails: emails
            .split(/[\s,]+/)
            .map((s) => s.trim())
            .filter(Boolean),
          webhookUrl: webhookUrl.trim() || null,
        },
      });
      onSaved(answer.webhookSecret);
    } catch (err) {
      setError(describeError(err));
    } finally {
      setSaving(false);
    }
  };

  return (
    <form
      onSubmit={(e) => void submit(e)}
      aria-label="New alert"
      className="grid gap-3 rounded-lg border border-zinc-800 bg-zinc-950 p-3 text-sm sm:grid-cols-2"
    >
      <label className="flex flex-col gap-1 text-zinc-300">
        Name
        <input required maxLength={100} value={name} onChange={(e) => setName(e.target.value)} className={field} />
      </label>
      <label className="flex flex-col gap-1 text-zinc-300">
        Endpoint
        <select value={endpoint} onChange={(e) => setEndpoint(e.target.value)} className={field}>
          <option value="">Every request (narrow it with the filter)</option>
          {choices.map((c) => (
            <option key={endpointKey(c)} value={endpointKey(c)}>
              {c.method} {c.host}
              {c.route} ({c.service || "unnamed service"})
            </option>
          ))}
        </select>
      </label>
      <label className="flex flex-col gap-1 text-zinc-300">
        Fires when
        <select value={metric} onChange={(e) => setMetric(e.target.value as AlertMetric)} className={field}>
          {Object.entries(metricLabels).map(([k, label]) => (
            <option key={k} value={k}>
              {label}
            </option>
          ))}
        </select>
      </label>
      <label className="flex flex-col gap-1 text-zinc-300">
        Threshold ({isPercent(metric) ? "%" : "ms"})
        <input
          required
          type="number"
          min={0}
          step="any"
          value={threshold}
          onChange={(e) => setThreshold(e.target.value)}
          className={field}
        />
      </label>
      <label className="flex flex-col gap-1 text-zinc-300">
        Over the last (minutes)
        <input
          required
          type="number"
          min={1}
          max={1440}
          value={windowMinutes}
          onChange={(e) => setWindow(e.target.value)}
          className={field}
        />
      </label>
      <label className="flex flex-col gap-1 text-zinc-300">
        With at least (requests)
        <input required type="number" min={1} value={minRequests} onChange={(e) => setMinRequests(e.target.value)} className={field} />
      </label>
      <label className="flex flex-col gap-1 text-zinc-300 sm:col-span-2">
        Filter (optional)
        <input
          value={filterText}
          placeholder='request.route startsWith "/api/"'
          onChange={(e) => setFilterText(e.target.value)}
          className={`${field} font-mono`}
        />
      </label>
      <label className="flex flex-col gap-1 text-zinc-300">
        E-mail (members of this namespace, comma separated)
        <input value={emails} onChange={(e) => setEmails(e.target.value)} className={field} />
      </label>
      <label className="flex flex-col gap-1 text-zinc-300">
        Webhook URL (optional, signed)
        <input
          type="url"
          value={webhookUrl}
          placeholder="https://example.com/hooks/tapscope"
          onChange={(e) => setWebhookUrl(e.target.value)}
          className={field}
        />
      </label>
      {error ? <ErrorNotice error={error} lead="The alert was not saved:" className="sm:col-span-2" /> : null}
      <div className="flex gap-2 sm:col-span-2">
        <Button type="submit" disabled={isSaving}>
          {isSaving ? "Saving…" : "Save alert"}
        </Button>
        <Button variant="ghost" onClick={onCancel}>
          Cancel
        </Button>
      </div>
    </form>
  );
}
