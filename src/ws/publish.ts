import { Elysia, t } from "elysia";
import type { GrantedSockets } from "~/engines/access/granted-sockets.ts";
import type { Ingest, ResendLookups } from "~/engines/ingest/ingest.ts";
import type { EventTarget } from "~/engines/ingest/sinks.ts";
import type { OrgPublishers } from "~/engines/limits/org-publishers.ts";
import type { ReplayRuns } from "~/engines/replay/replay-runs.ts";
import type { WorkerRegistry } from "~/engines/workers/worker-registry.ts";
import { AppError } from "~/lib/errors.ts";
import { EVENT_BATCH_FORMAT } from "~/lib/protocol/event-batch.ts";
import { type PublishServerMessage, publishLimits, publishPath } from "~/lib/protocol/publish.ts";
import { type PublisherHello, publisherControlKind, type ReplayAnswer, replayLimits } from "~/lib/protocol/replay.ts";
import { log } from "~/lib/server/logger.ts";
import { containersFull } from "~/services/billing/limits.ts";
import type { ServiceContext } from "~/services/context.ts";
import { markPublisherSeen } from "~/services/publish/mark-publisher-seen.ts";
import { type PublishTicketClaims, redeemPublishTicket } from "~/services/publish/publish-ticket.ts";
import type { ChannelSocket, RawFrame, SocketChannel, SocketServer } from "./socket-server.ts";
import { admitTicket } from "./ticket.ts";

/** Who wants to know that publishers come and go (the live hub's stats). */
export type PublisherPresence = {
  publisherConnected(target: EventTarget): void;
  publisherDisconnected(target: EventTarget): void;
};

/**
 * /api/PublishEvents?ticket=...: the capture CLI's socket. Every message is validated and answered (ack,
 * or error for a refused message); nothing a publisher sends can close the socket or reach the sinks
 * unvalidated. The work per message is synchronous and bounded; storage happens behind the sinks.
 */
export function publishSocket({
  ctx,
  ingest,
  presence,
  sockets,
  orgPublishers,
  workers,
  replays,
  server,
}: {
  ctx: ServiceContext;
  ingest: Ingest;
  /** Told when an org's program connects (its store is then searchable: the dashboard's Requests link). */
  workers?: Pick<WorkerRegistry, "publisherConnected">;
  presence?: PublisherPresence;
  sockets: GrantedSockets;
  /** Each org's publishers: a place under the plan's containers limit is taken at the upgrade (the containers limit). */
  orgPublishers?: OrgPublishers;
  /** Runs of a namespace that said `--allow-replay` in their hello (a link's runs never serve replays). */
  replays?: ReplayRuns;
  server: SocketServer;
}) {
  const targets = new WeakMap<
    object,
    { target: EventTarget; claims: PublishTicketClaims; unregister: () => void; slot: string | null; resends: ResendLookups }
  >();

  const send = (ws: ChannelSocket, message: PublishServerMessage) => ws.sendText(JSON.stringify(message));
  const isExpired = (claims: PublishTicketClaims) => claims.linkExpiresAt !== null && claims.linkExpiresAt <= ctx.now().getTime();

  const receive = (raw: ChannelSocket, frame: RawFrame) => {
    const entry = targets.get(raw);
    if (!entry) return;
    if (isExpired(entry.claims)) {
      send(raw, { type: "expired" });
      raw.close(4410, "link expired");
      return;
    }
    if (typeof frame === "string" && frame.length <= maxControlChars && publisherControlKind(frame)) {
      receiveControl(raw, entry.claims, frame);
      return;
    }
    let received: ReturnType<Ingest["receive"]>;
    try {
      const { orgId, orgRateLimit } = entry.claims;
      const orgLimit = orgId && orgRateLimit ? { orgId, ratePerSecond: orgRateLimit } : undefined;
      received = ingest.receive(entry.target, frame, orgLimit, entry.resends);
    } catch (err) {
      log.error("publish message failed", { err });
      received = { reply: { type: "error", seq: null, code: "malformed", message: "message could not be processed" }, stored: null };
    }
    // An ack means stored: it waits for the store's write (the publisher counts unanswered messages as dropped).
    if (received.stored) void received.stored.then((reply) => send(raw, reply)).catch(() => undefined);
    else send(raw, received.reply);
  };

  /** A hello or a replay's answer: anything malformed is dropped (the socket is the run's, and stays open). */
  const receiveControl = (raw: ChannelSocket, claims: PublishTicketClaims, frame: string) => {
    const message = parseControl(frame);
    if (!message || !replays) return;
    if (message.type === "hello") {
      // Only a namespace token's run may serve replays: its namespace is the one the ticket names.
      if (message.allowsReplay && claims.namespaceId && !claims.linkId) {
        replays.register(raw, {
          namespaceId: claims.namespaceId,
          service: message.service,
          send: (order) => send(raw, order),
        });
      } else replays.unregister(raw);
      return;
    }
    replays.answered(raw, message);
  };

  const channel: SocketChannel<{ claims: PublishTicketClaims; reservedSlot: string | null }> = {
    kind: "publish",
    // Over maxMessageBytes a message is still answered (with an error) up to twice that; beyond, the socket closes.
    maxMessageBytes: 2 * publishLimits.maxMessageBytes,
    open(raw, { claims, reservedSlot }) {
      const target: EventTarget = { namespaceId: claims.namespaceId, linkId: claims.linkId };
      const unregister = sockets.register(claims.grants, { close: (code, reason) => raw.close(code, reason) });
      const slot = claims.orgId && orgPublishers ? orgPublishers.connected(claims.orgId, reservedSlot ?? undefined) : null;
      targets.set(raw, { target, claims, unregister, slot, resends: ingest.resendLookups() });
      send(raw, {
        type: "ready",
        namespaceId: claims.namespaceId,
        linkId: claims.linkId,
        maxMessageBytes: publishLimits.maxMessageBytes,
        maxEventsPerMessage: publishLimits.maxEventsPerMessage,
        formats: [EVENT_BATCH_FORMAT],
        ...(ingest.acceptsResent ? { acceptsResent: true } : {}),
        pending: true,
      });
      presence?.publisherConnected(target);
      if (claims.orgId) {
        markPublisherSeen({ ctx, orgId: claims.orgId }).catch((err) => log.warn("could not mark publisher seen", { err }));
        workers?.publisherConnected(claims.orgId).catch((err) => log.warn("could not mark the org's store seen", { err }));
      }
    },
    message: receive,
    close(raw) {
      const entry = targets.get(raw);
      if (!entry) return;
      targets.delete(raw);
      replays?.unregister(raw);
      entry.unregister();
      presence?.publisherDisconnected(entry.target);
      if (entry.claims.orgId && entry.slot) orgPublishers?.disconnected(entry.claims.orgId, entry.slot);
    },
  };

  return new Elysia({ name: "ws-publish" })
    .resolve(async ({ query, path }) => {
      if (path !== publishPath) return {};
      const claims = await admitTicket({
        ctx,
        channel: "PublishEvents",
        ticket: query.ticket,
        redeem: (ticket) => redeemPublishTicket(ctx.config.sessionSecret, ticket, ctx.now()),
      });
      // The plan's containers are counted here, as the socket opens: tickets taken first do not all get in.
      const { orgId, containerLimit } = claims;
      const slot = orgId && containerLimit !== undefined && orgPublishers ? await orgPublishers.reserve(orgId, containerLimit) : null;
      if (orgId && containerLimit !== undefined && orgPublishers && slot === null) {
        throw containersFull(containerLimit, orgPublishers.count(orgId));
      }
      return { publish: claims, publishSlot: slot };
    })
    .get(publishPath, (c) => server.upgrade(c, channel, { claims: c.publish!, reservedSlot: c.publishSlot ?? null }), {
      query: t.Object({ ticket: t.Optional(t.String({ maxLength: 2048 })) }),
    });
}

/** A hello is small; a replay's answer carries a response body of at most maxResponseBodyBytes, as base64. */
const maxControlChars =
  4 * Math.ceil(replayLimits.maxResponseBodyBytes / 3) + 2 * replayLimits.maxHeaders * replayLimits.maxHeaderValueChars;

/** The publisher's control frames, checked field by field: the socket is untrusted input. */
export function parseControl(frame: string): PublisherHello | ReplayAnswer | null {
  let value: unknown;
  try {
    value = JSON.parse(frame);
  } catch {
    return null;
  }
  if (typeof value !== "object" || value === null) return null;
  const m = value as Record<string, unknown>;
  if (m.type === "hello") {
    if (typeof m.allowsReplay !== "boolean") return null;
    const service = typeof m.service === "string" ? m.service.slice(0, publishLimits.maxShortChars) : "";
    return { type: "hello", allowsReplay: m.allowsReplay, service };
  }
  if (m.type !== "replayed" || typeof m.id !== "string" || m.id.length > 64) return null;
  if (m.ok === false)
    return { type: "replayed", id: m.id, ok: false, error: String(m.error ?? "the run could not send it").slice(0, 1000) };
  if (m.ok !== true) return null;
  const headers = Array.isArray(m.headers) ? m.headers : [];
  const pairs: Array<[string, string]> = [];
  for (const h of headers.slice(0, replayLimits.maxHeaders)) {
    if (Array.isArray(h) && typeof h[0] === "string" && typeof h[1] === "string") {
      pairs.push([h[0].slice(0, replayLimits.maxHeaderNameChars), h[1].slice(0, replayLimits.maxHeaderValueChars)]);
    }
  }
  const status = Number(m.status);
  const durationUs = Number(m.durationUs);
  if (!Number.isInteger(status) || status < 0 || status > 999) return null;
  return {
    type: "replayed",
    id: m.id,
    ok: true,
    eventId: typeof m.eventId === "string" ? m.eventId.slice(0, 64) : "",
    status,
    headers: pairs,
    body: typeof m.body === "string" && /^[A-Za-z0-9+/]*={0,2}$/.test(m.body) ? m.body : "",
    isBodyTruncated: m.isBodyTruncated === true,
    durationUs: Number.isFinite(durationUs) && durationUs >= 0 ? Math.round(durationUs) : 0,
  };
}
