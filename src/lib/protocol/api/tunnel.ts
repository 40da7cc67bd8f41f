import { type Static, Type } from "@sinclair/typebox";
import { earliestMs } from "~/lib/time/bounds.ts";
import { OptionalError } from "./common.ts";

export const TunnelRole = Type.Union([Type.Literal("SELECT"), Type.Literal("INSERT")]);
export type TunnelRole = Static<typeof TunnelRole>;

export const CreateTunnelRequest = Type.Object({
  /** Optional with a namespace token (its own namespace). */
  namespaceId: Type.Optional(Type.String({ maxLength: 64 })),
  role: TunnelRole,
});
export type CreateTunnelRequest = Static<typeof CreateTunnelRequest>;
/** endpoint: the WebSocket URL, carrying a one-minute ticket (lib/protocol/tunnel.ts has its frames). */
export const CreateTunnelResponse = Type.Object({ tunnel_id: Type.String(), endpoint: Type.String(), error: OptionalError });
export type CreateTunnelResponse = Static<typeof CreateTunnelResponse>;

/** create_after_time: an ISO date or milliseconds; the caller's own tunnels created after it. */
export const ListOpenTunnelsRequest = Type.Object({
  create_after_time: Type.Optional(Type.Union([Type.String({ maxLength: 64 }), Type.Number()])),
});
export type ListOpenTunnelsRequest = Static<typeof ListOpenTunnelsRequest>;
export const OpenTunnelSummary = Type.Object({
  tunnel_id: Type.String(),
  role: TunnelRole,
  namespace_id: Type.String(),
  create_time: Type.String(),
});
export type OpenTunnelSummary = Static<typeof OpenTunnelSummary>;
export const ListOpenTunnelsResponse = Type.Object({ tunnels: Type.Array(OpenTunnelSummary), error: OptionalError });
export type ListOpenTunnelsResponse = Static<typeof ListOpenTunnelsResponse>;

/** GET /api/DownloadHar: one event's HAR. */
export const DownloadHarQuery = Type.Object({
  namespaceId: Type.String({ maxLength: 64 }),
  eventId: Type.String({ maxLength: 64 }),
});
export type DownloadHarQuery = Static<typeof DownloadHarQuery>;

// Whole milliseconds from 2000 on; the service checks the rest (lib/time/bounds.ts: a day past now, 400 days long).
const Ms = Type.Integer({ minimum: earliestMs, maximum: Number.MAX_SAFE_INTEGER });
const TimeRange = Type.Object({ lowerMs: Ms, upperMs: Ms });

/** POST /api/DownloadHar: the HAR of a query's result set. */
export const DownloadHarRequest = Type.Object({
  namespaceId: Type.String({ maxLength: 64 }),
  filter: Type.Object({
    // Clauses are validated by the store's compiler (whitelisted columns and operators).
    clauses: Type.Array(Type.Unknown(), { maxItems: 64 }),
    global: TimeRange,
    focus: Type.Optional(Type.Union([TimeRange, Type.Null()])),
  }),
  filterText: Type.Optional(Type.String({ maxLength: 4096 })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 10_000 })),
});
export type DownloadHarRequest = Static<typeof DownloadHarRequest>;
