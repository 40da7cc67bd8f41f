import { formatLogLine, formatPendingLine } from "~/agent/log-line.ts";
import { errorMessage } from "~/lib/errors.ts";
import { parseFilter } from "~/lib/filter/parse.ts";
import type { JoinSubscriberResponse } from "~/lib/protocol/api/live.ts";
import { eventFields, type TracedEvent } from "~/lib/protocol/event.ts";
import type { LiveClientMessage, LiveServerMessage } from "~/lib/protocol/live.ts";
import type { PendingRequest } from "~/lib/protocol/pending.ts";
import { parseAgentConfig } from "~/lib/server/env.ts";
import { parseFlags } from "~/lib/server/flags.ts";
import { isoMicros } from "./query.ts";

const usage = `usage: tapscope tail [--filter EXPR] [--format line|json]
  Follows the requests of TAPSCOPE_TOKEN's namespace as they happen (TAPSCOPE_ENDPOINT is the server), one line each:
  as \`tapscope run --log\` prints them (in colour) on a terminal, JSON lines otherwise. Ctrl-C ends it.
  A request that waits a second or more for its answer gets a line when it starts waiting ("··· GET /hang  pending";
  in JSON, a record with "pending": true and the fields known so far), once, then its usual line when it ends.
  --filter uses the filter language, applied by the server: response.status >= 500 && request.url contains "/api/"`;

const tailFlags = {
  filter: { type: "string" },
  format: { type: "string" },
  help: { type: "boolean", short: "h" },
} as const;

/** Events of the history shown when tail starts (as `tail` shows the last lines first). */
const historyLines = 10;
/** The socket's close code when the token it stood on was deleted (engines/access). */
const REVOKED_CLOSE_CODE = 4401;

function fail(message: string, code = 2): number {
  process.stderr.write(`tapscope tail: ${message}\n`);
  return code;
}

/** A filter's problem, with the expression and a caret under the position, as `tapscope query` prints it. */
function filterError(filter: string, message: string, position: number): string {
  return `bad filter: ${message}\n  ${filter}\n  ${" ".repeat(Math.max(0, position))}^`;
}

const timeColumn = eventFields.time.name;

/**
 * One JSON line: the fields a query's rows show (the field table's `shown`: the JSON export's columns, the parent and
 * the tags that say where its TLS stood), time as ISO with microseconds.
 */
export function jsonLine(e: TracedEvent): string {
  const event = e as Record<string, unknown>;
  const line: Record<string, unknown> = {};
  for (const c of eventFields.rowColumns) line[c] = c === timeColumn ? isoMicros(e.time) : event[c];
  return `${JSON.stringify(line)}\n`;
}

/** A request still waiting, as a JSON line: what is known of it so far, time as ISO, and `pending: true`. */
export function pendingJsonLine(p: PendingRequest): string {
  return `${JSON.stringify({ ...p, time: isoMicros(p.time), pending: true })}\n`;
}

/** Requests printed as pending whose end has not been printed: a request is printed pending once, even across reconnects. */
const maxPendingRemembered = 10_000;
/** Event ids remembered as printed (more than a live hub's history holds). */
const maxPrintedRemembered = 5000;

type Ended = { kind: "stopped" } | { kind: "fatal"; code: number } | { kind: "lost"; why: string };

export async function main(args: string[]): Promise<number> {
  const agent = parseAgentConfig();
  const parsed = parseFlags(args, tailFlags);
  if (!parsed.ok) return fail(`${parsed.error}\n${usage}`);
  const { flags } = parsed;
  if (flags.help) {
    process.stdout.write(`${usage}\n`);
    return 0;
  }
  const isTerminal = process.stdout.isTTY === true;
  const format = flags.format ?? (isTerminal ? "line" : "json");
  if (format !== "line" && format !== "json") return fail(`--format must be line or json, got "${format}"`);
  const filter = (flags.filter ?? "").trim();
  if (filter) {
    const checked = parseFilter(filter);
    if (!checked.ok) return fail(filterError(filter, checked.error.message, checked.error.position));
  }
  if (!agent.token) return fail("TAPSCOPE_TOKEN is not set: create a namespace token under Tokens in the dashboard and export it");
  const token = agent.token;
  const color = format === "line" && isTerminal && !agent.isColorRefused;
  const print = (e: TracedEvent) => process.stdout.write(format === "json" ? jsonLine(e) : `${formatLogLine(e, { color })}\n`);

  const printPending = (p: PendingRequest) =>
    process.stdout.write(format === "json" ? pendingJsonLine(p) : `${formatPendingLine(p, { color })}\n`);

  let socket: WebSocket | null = null;
  let stop: (() => void) | null = null;
  const onSignal = () => {
    stop?.();
    socket?.close(1000, "tail ended");
  };
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);

  /**
   * The events printed lately (a live hub's history is smaller), so a reconnect's history prints what the server kept
   * since then and nothing twice. Events come in the order they end while their time is their start: a request that
   * waited ends after others that started later, so the time alone cannot tell what was printed.
   */
  const printed = new Map<string, number>();
  /** The newest start among the events forgotten from `printed`: a history event at or before it was printed. */
  let forgottenUpTo = -1;
  const remember = (e: TracedEvent) => {
    printed.set(e.event_id, e.time);
    if (printed.size <= maxPrintedRemembered) return;
    const [oldest, time] = printed.entries().next().value as [string, number];
    printed.delete(oldest);
    forgottenUpTo = Math.max(forgottenUpTo, time);
  };
  const shownPending = new Set<string>();
  const show = (events: readonly TracedEvent[], isHistory: boolean) => {
    for (const e of events) {
      shownPending.delete(e.event_id);
      if (printed.has(e.event_id) || (isHistory && e.time <= forgottenUpTo)) continue;
      remember(e);
      print(e);
    }
  };
  const showPending = (requests: readonly PendingRequest[]) => {
    for (const p of requests) {
      if (shownPending.has(p.event_id) || printed.has(p.event_id)) continue;
      if (shownPending.size >= maxPendingRemembered) shownPending.delete(shownPending.values().next().value as string);
      shownPending.add(p.event_id);
      printPending(p);
    }
  };

  const follow = (url: string, isFirst: boolean): Promise<Ended> =>
    new Promise((resolve) => {
      let ended = false;
      const end = (how: Ended) => {
        if (ended) return;
        ended = true;
        stop = null;
        resolve(how);
      };
      stop = () => end({ kind: "stopped" });
      const ws = new WebSocket(url);
      socket = ws;
      const revision = 1;
      // Until the server applies this filter, what it sends matches the socket's first (empty) config: not ours to show.
      let isApplied = false;
      ws.onopen = () => {
        const config: LiveClientMessage = { type: "setConfig", revision, filters: filter ? [filter] : [] };
        ws.send(JSON.stringify(config));
      };
      ws.onmessage = (ev) => {
        if (typeof ev.data !== "string") return;
        let message: LiveServerMessage;
        try {
          message = JSON.parse(ev.data) as LiveServerMessage;
        } catch {
          return;
        }
        switch (message.type) {
          case "setFilterError":
            process.stderr.write(`tapscope tail: ${filterError(filter, message.message, message.position)}\n`);
            ws.close(1000, "bad filter");
            end({ kind: "fatal", code: 2 });
            return;
          case "config-applied":
            isApplied = message.revision === revision;
            return;
          case "history":
            if (message.revision !== revision) return;
            show(isFirst && printed.size === 0 ? message.events.slice(-historyLines) : message.events, true);
            return;
          case "events":
            if (isApplied) show(message.events, false);
            return;
          case "pending":
            if (isApplied) showPending(message.requests);
            return;
          case "settled":
            // Ended, and its event does not pass the filter: nothing more is printed of it.
            for (const id of message.eventIds) shownPending.delete(id);
            return;
          case "dropped":
            process.stderr.write(`tapscope tail: ${message.count} requests skipped (this terminal could not keep up)\n`);
            return;
          case "stats":
            if (message.notice) process.stderr.write(`tapscope tail: ${message.notice}\n`);
            return;
          default:
            return;
        }
      };
      ws.onclose = (ev) => {
        if (ev.code === REVOKED_CLOSE_CODE) {
          process.stderr.write(`tapscope tail: the server ended access (${ev.reason || "TAPSCOPE_TOKEN was deleted"})\n`);
          end({ kind: "fatal", code: 1 });
          return;
        }
        end(ended ? { kind: "stopped" } : { kind: "lost", why: ev.reason || `closed (${ev.code})` });
      };
      ws.onerror = () => {};
    });

  let attempt = 0;
  let isReconnecting = false;
  try {
    for (;;) {
      let joined: JoinSubscriberResponse & { error?: string };
      let status = 0;
      try {
        const res = await fetch(`${agent.endpoint}/api/JoinSubscriber`, {
          method: "POST",
          headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
          body: "{}",
          signal: AbortSignal.timeout(15_000),
        });
        status = res.status;
        joined = (await res.json().catch(() => ({}))) as JoinSubscriberResponse & { error?: string };
      } catch (err) {
        joined = { websocketUrl: "", error: errorMessage(err) };
      }
      if (status === 401) return fail("the server refused TAPSCOPE_TOKEN (revoked or mistyped?)", 1);
      if (status === 403 || status === 404) return fail(joined.error ?? `JoinSubscriber answered ${status}`, 1);
      if (status === 200 && joined.websocketUrl) {
        if (isReconnecting) process.stderr.write(`tapscope tail: reconnected to ${agent.endpoint}\n`);
        const ended = await follow(joined.websocketUrl, attempt === 0 && !isReconnecting);
        if (ended.kind === "stopped") return 0;
        if (ended.kind === "fatal") return ended.code;
        process.stderr.write(`tapscope tail: lost the connection to ${agent.endpoint} (${ended.why}); reconnecting…\n`);
        isReconnecting = true;
        attempt = 0;
      } else if (attempt === 0 && !isReconnecting) {
        return fail(
          `cannot reach the server at ${agent.endpoint} (is TAPSCOPE_ENDPOINT right?): ${joined.error ?? `answered ${status}`}`,
          1,
        );
      }
      attempt++;
      // Back off while the server is away; Ctrl-C still ends at once.
      const waitMs = Math.min(10_000, 250 * 2 ** Math.min(attempt, 6));
      const stopped = await new Promise<boolean>((resolve) => {
        const timer = setTimeout(() => resolve(false), waitMs);
        stop = () => {
          clearTimeout(timer);
          resolve(true);
        };
      });
      stop = null;
      if (stopped) return 0;
    }
  } finally {
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
  }
}
