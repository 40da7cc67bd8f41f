import { type Static, type TSchema, Type } from "@sinclair/typebox";
import { type TypeCheck, TypeCompiler } from "@sinclair/typebox/compiler";
import type { Result } from "~/lib/result.ts";
import { patternLimits } from "~/lib/routes/patterns.ts";
import { maxRouteChars } from "~/lib/routes/template.ts";
import { TunnelRole } from "./api/tunnel.ts";
import type { ChannelKey } from "./channel-key.ts";
import { pendingLimits } from "./pending.ts";
import { replayLimits } from "./replay.ts";
import type { TunnelRequest } from "./tunnel.ts";

/**
 * What a cluster's server nodes say to each other through the broker (ADR 0021): each broker channel's message, and
 * each call one node makes to another, defined once here as a kind-to-schema table (as `api/calls.ts` does for the
 * API). JSON text on Redis pub/sub. Another node is trusted more than a browser, but what arrives from Redis is still
 * checked here, once, before any engine reads it: a message that is not JSON, too long or of the wrong shape is
 * refused (the node drops and counts it). Events inside these messages are checked by the publish validator, as ingest
 * checks a publisher's (the field table lives with it).
 */

/** Redis pub/sub channels and keys, all under `tapscope:`. */
export const brokerChannels = {
  /** Batches accepted by one node, for the other nodes' live hubs. */
  live: "tapscope:live",
  /** Each node's publishers and watched channels. */
  presence: "tapscope:presence",
  /** What each node's rate limiters granted. */
  limits: "tapscope:limits",
  /** The route names each node counted and the positions it folded (engines/routes), and patterns set on it. */
  routes: "tapscope:routes",
} as const;

/** The channel one node is asked on (and answers on to the asking node's). */
export function nodeChannel(nodeId: string): string {
  return `tapscope:node:${nodeId}`;
}

export const brokerKeys = {
  /** A socket ticket's nonce, spent once in the whole cluster. */
  ticket: (nonce: string) => `tapscope:ticket:${nonce}`,
  /** An org's publishers' places under the plan's containers limit (a sorted set). */
  publishers: (orgId: string) => `tapscope:publishers:${orgId}`,
  /** The node that evaluates the alert rules and sends their notifications (a lease). */
  alerts: "tapscope:alerts",
};

/** Well past what any message holds (a channel's history, a publisher message's events as JSON): JSON beyond is not parsed. */
export const maxBrokerMessageChars = 64 * 1024 * 1024;
/** Entries in one list of a message (channels, orgs, clients): far more than a node holds. */
const maxListItems = 100_000;
/** Events in one live batch (a publisher message's accepted events) or one history answer (a channel's history). */
export const maxBrokerEvents = 100_000;

const NodeId = Type.String({ minLength: 1, maxLength: 256 });
const ChannelKeySchema = Type.Unsafe<ChannelKey>(Type.String({ pattern: "^(ns|link):.", maxLength: 256 }));
const Count = Type.Integer({ minimum: 0, maximum: 1_000_000_000 });
/** What a limiter granted one key: bounded, so a bad grant cannot shut a namespace out for ever. */
const Granted = Type.Number({ minimum: 0, maximum: 1_000_000_000 });
const Grants = Type.Array(Type.Tuple([Type.String({ maxLength: 1024 }), Granted]), { maxItems: maxListItems });
/** A route up to one of its positions (RouteTemplates). */
const RoutePrefix = Type.String({ maxLength: maxRouteChars });
/** Names or folds in one routes message: what a node keeps between two shares. */
const maxRouteItems = 20_000;
/** Events as another node's ingest accepted them; each is validated again where it arrives. */
const Events = Type.Array(Type.Unknown(), { maxItems: maxBrokerEvents });

/** The messages of the broker's shared channels, by channel. */
export const brokerMessages = {
  /**
   * A batch node `n` accepted for a namespace and/or link (published only while another node watches it): events (e),
   * or requests still waiting for their answer (p, pending.ts: shown live, never stored), validated again on arrival.
   */
  live: Type.Object({
    n: NodeId,
    ns: Type.Union([Type.String({ maxLength: 256 }), Type.Null()]),
    l: Type.Union([Type.String({ maxLength: 256 }), Type.Null()]),
    e: Events,
    p: Type.Optional(Type.Array(Type.Unknown(), { maxItems: pendingLimits.maxPerMessage })),
  }),
  /**
   * Node `n`'s publishers by channel (c) and by org (o), the channels it has viewers for (w), and the namespaces a
   * run connected to it serves replays for (r: where a Resend is forwarded).
   */
  presence: Type.Object({
    n: NodeId,
    c: Type.Array(Type.Tuple([ChannelKeySchema, Count]), { maxItems: maxListItems }),
    o: Type.Array(Type.Tuple([Type.String({ maxLength: 256 }), Count]), { maxItems: maxListItems }),
    w: Type.Optional(Type.Array(ChannelKeySchema, { maxItems: maxListItems })),
    r: Type.Optional(Type.Array(Type.String({ maxLength: 256 }), { maxItems: maxListItems })),
  }),
  /** What node `n`'s ingest limiters (l, by limiter name) and per-client limiters (c: per kind, by client, and the global count) granted. */
  limits: Type.Object({
    n: NodeId,
    l: Type.Record(Type.String({ pattern: "^(ns|org:[0-9]{1,12})$" }), Grants, { additionalProperties: false }),
    c: Type.Optional(
      Type.Record(Type.String({ pattern: "^[A-Za-z]{1,32}$" }), Type.Object({ k: Grants, g: Granted }), { additionalProperties: false }),
    ),
  }),
  /**
   * Node `n`'s route guard: positions it folded (f: channel key, route prefix), names it counted (v: key, prefix, the
   * names' hashes) and namespaces' patterns an admin set on it (p). Bounded as the guard is (RouteTemplates).
   */
  routes: Type.Object({
    n: NodeId,
    f: Type.Array(Type.Tuple([ChannelKeySchema, RoutePrefix]), { maxItems: maxRouteItems }),
    v: Type.Array(
      Type.Tuple([
        ChannelKeySchema,
        RoutePrefix,
        Type.Array(Type.Integer({ minimum: 0, maximum: 2 ** 32 - 1 }), { maxItems: maxRouteItems }),
      ]),
      {
        maxItems: maxRouteItems,
      },
    ),
    p: Type.Optional(
      Type.Array(
        Type.Tuple([
          Type.String({ maxLength: 64 }),
          Type.Array(Type.String({ maxLength: patternLimits.maxChars }), { maxItems: patternLimits.maxPatterns }),
        ]),
        { maxItems: 1000 },
      ),
    ),
  }),
  /**
   * A call to one node (`body` set, on that node's channel) or its answer (`answer` or `error`, on the caller's). Body
   * and answer are the JSON of the call's own shapes (nodeCalls).
   */
  node: Type.Object({
    id: Type.String({ minLength: 1, maxLength: 512 }),
    from: NodeId,
    kind: Type.String({ maxLength: 64 }),
    body: Type.Optional(Type.String()),
    answer: Type.Optional(Type.String()),
    error: Type.Optional(Type.String({ maxLength: 64 * 1024 })),
  }),
} as const satisfies Record<string, TSchema>;

export type BrokerMessageKind = keyof typeof brokerMessages;
export type BrokerMessage<K extends BrokerMessageKind> = Static<(typeof brokerMessages)[K]>;

/** A tunnel created and not yet closed or expired unredeemed, as ListOpenTunnels reports it from any node. */
export const OpenTunnel = Type.Object({
  tunnelId: Type.String({ maxLength: 256 }),
  principalKey: Type.String({ maxLength: 1024 }),
  namespaceId: Type.String({ maxLength: 256 }),
  role: TunnelRole,
  createTimeMs: Type.Number(),
  /** Until the ticket is redeemed: when it expires; while connected: null. */
  expiresAtMs: Type.Union([Type.Number(), Type.Null()]),
});
export type OpenTunnel = Static<typeof OpenTunnel>;

/**
 * A tunnel request forwarded to the node that holds the org's worker: its envelope is checked here; what it asks
 * (`want`) is checked by the worker that runs it, as for any tunnel.
 */
const ForwardedRequest = Type.Unsafe<TunnelRequest>(
  Type.Object({
    queryId: Type.String({ maxLength: 64 }),
    tags: Type.Object({ namespaceId: Type.Optional(Type.String()), orgId: Type.Optional(Type.String()) }),
    compression: Type.Union([Type.Literal("none"), Type.Literal("gzip")]),
    want: Type.Object({ kind: Type.String({ maxLength: 32 }) }),
  }),
);

/** Base64 of at most `bytes` bytes. */
const base64Chars = (bytes: number) => Math.ceil(bytes / 3) * 4;

/**
 * A Resend forwarded to the node holding a replay-allowing run of the namespace: the edit and where the original went,
 * as the asking node read it from the stored event. Bounded as the API call and the run are (replayLimits); the node
 * that runs it checks the edit again and sends it only to a run of this namespace connected to it.
 */
const ForwardedReplay = Type.Object({
  namespaceId: Type.String({ minLength: 1, maxLength: 256 }),
  service: Type.String({ maxLength: 256 }),
  replayOf: Type.String({ minLength: 1, maxLength: 64 }),
  target: Type.Object({
    direction: Type.Union([Type.Literal("inbound"), Type.Literal("outbound")]),
    address: Type.String({ minLength: 1, maxLength: 300 }),
    host: Type.String({ maxLength: 1024 }),
    isTls: Type.Boolean(),
    serverName: Type.String({ maxLength: 1024 }),
  }),
  method: Type.String({ minLength: 1, maxLength: replayLimits.maxMethodChars }),
  path: Type.String({ minLength: 1, maxLength: replayLimits.maxPathChars }),
  headers: Type.Array(
    Type.Tuple([Type.String({ maxLength: replayLimits.maxHeaderNameChars }), Type.String({ maxLength: replayLimits.maxHeaderValueChars })]),
    { maxItems: replayLimits.maxHeaders },
  ),
  body: Type.String({ maxLength: base64Chars(replayLimits.maxBodyBytes) }),
});
export type ForwardedReplay = Static<typeof ForwardedReplay>;

/** The run's answer to a forwarded Resend, or why the holding node refused it (`refused`: the API error's code). */
const ForwardedReplayAnswer = Type.Union([
  Type.Object({
    ok: Type.Literal(true),
    eventId: Type.String({ maxLength: 64 }),
    status: Type.Integer({ minimum: 0, maximum: 999 }),
    headers: Type.Array(
      Type.Tuple([
        Type.String({ maxLength: replayLimits.maxHeaderNameChars }),
        Type.String({ maxLength: replayLimits.maxHeaderValueChars }),
      ]),
      { maxItems: replayLimits.maxHeaders },
    ),
    body: Type.String({ maxLength: base64Chars(replayLimits.maxResponseBodyBytes) }),
    isBodyTruncated: Type.Boolean(),
    durationUs: Type.Number({ minimum: 0 }),
  }),
  Type.Object({ ok: Type.Literal(false), error: Type.String({ maxLength: 4096 }) }, { additionalProperties: false }),
  Type.Object(
    {
      ok: Type.Literal(false),
      refused: Type.Union([
        Type.Literal("BAD_REQUEST"),
        Type.Literal("CONFLICT"),
        Type.Literal("RATE_LIMITED"),
        Type.Literal("UNAVAILABLE"),
      ]),
      error: Type.String({ maxLength: 4096 }),
    },
    { additionalProperties: false },
  ),
]);
export type ForwardedReplayAnswer = Static<typeof ForwardedReplayAnswer>;

/** What one node may ask another: each call's body and answer. */
export const nodeCalls = {
  /** Another node's first viewer of a channel: the events kept before this node started publishing it to the broker. */
  history: { body: Type.Object({ key: ChannelKeySchema, node: NodeId }), answer: Events },
  /** ListOpenTunnels: the principal's tunnels this node holds, created after a time. */
  tunnels: {
    body: Type.Object({ principalKey: Type.String({ maxLength: 1024 }), createdAfterMs: Type.Number() }),
    answer: Type.Array(OpenTunnel, { maxItems: maxListItems }),
  },
  /** A request for an org's self-hosted worker, whose socket the asked node holds; the answer is its result frame, base64. */
  worker: { body: Type.Object({ orgId: Type.String({ maxLength: 256 }), request: ForwardedRequest }), answer: Type.String() },
  /** A Resend for a namespace whose replay-allowing run the asked node holds (it said so in its presence). */
  replay: { body: ForwardedReplay, answer: ForwardedReplayAnswer },
} as const satisfies Record<string, { body: TSchema; answer: TSchema }>;

export type NodeCallKind = keyof typeof nodeCalls;
export type NodeCallBody<K extends NodeCallKind> = Static<(typeof nodeCalls)[K]["body"]>;
export type NodeCallAnswer<K extends NodeCallKind> = Static<(typeof nodeCalls)[K]["answer"]>;

export function isNodeCallKind(kind: string): kind is NodeCallKind {
  return Object.hasOwn(nodeCalls, kind);
}

function compileAll<T extends Record<string, TSchema>>(schemas: T): { [K in keyof T]: TypeCheck<T[K]> } {
  return Object.fromEntries(Object.entries(schemas).map(([k, s]) => [k, TypeCompiler.Compile(s)])) as { [K in keyof T]: TypeCheck<T[K]> };
}

const messageChecks = compileAll(brokerMessages);
const bodyChecks = compileAll(
  Object.fromEntries(Object.entries(nodeCalls).map(([k, c]) => [k, c.body])) as {
    [K in NodeCallKind]: (typeof nodeCalls)[K]["body"];
  },
);
const answerChecks = compileAll(
  Object.fromEntries(Object.entries(nodeCalls).map(([k, c]) => [k, c.answer])) as {
    [K in NodeCallKind]: (typeof nodeCalls)[K]["answer"];
  },
);

/** JSON text checked against a compiled schema: the value, or why not (its first error). */
function decodeChecked<T extends TSchema>(check: TypeCheck<T>, text: string): Result<{ value: Static<T> }> {
  if (text.length > maxBrokerMessageChars) return { ok: false, error: `longer than ${maxBrokerMessageChars} characters` };
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { ok: false, error: "not JSON" };
  }
  if (check.Check(value)) return { ok: true, value };
  const first = check.Errors(value).First();
  return { ok: false, error: first ? `${first.path || "/"}: ${first.message}` : "wrong shape" };
}

export function encodeBrokerMessage<K extends BrokerMessageKind>(_kind: K, message: BrokerMessage<K>): string {
  return JSON.stringify(message);
}

/** A message from the broker's channel `kind`, checked. */
export function decodeBrokerMessage<K extends BrokerMessageKind>(kind: K, text: string): Result<{ value: BrokerMessage<K> }> {
  return decodeChecked(messageChecks[kind] as TypeCheck<(typeof brokerMessages)[K]>, text);
}

export function encodeNodeBody<K extends NodeCallKind>(_kind: K, body: NodeCallBody<K>): string {
  return JSON.stringify(body);
}

export function decodeNodeBody<K extends NodeCallKind>(kind: K, text: string): Result<{ value: NodeCallBody<K> }> {
  return decodeChecked(bodyChecks[kind] as TypeCheck<(typeof nodeCalls)[K]["body"]>, text);
}

export function encodeNodeAnswer<K extends NodeCallKind>(_kind: K, answer: NodeCallAnswer<K>): string {
  return JSON.stringify(answer);
}

export function decodeNodeAnswer<K extends NodeCallKind>(kind: K, text: string): Result<{ value: NodeCallAnswer<K> }> {
  return decodeChecked(answerChecks[kind] as TypeCheck<(typeof nodeCalls)[K]["answer"]>, text);
}
