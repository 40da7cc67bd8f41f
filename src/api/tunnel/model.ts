import { t } from "elysia";
import { earliestMs } from "~/lib/time/bounds.ts";

const error = t.Optional(t.String());
// Whole milliseconds from 2000 on; the service checks the rest (lib/time/bounds.ts: a day past now, 400 days long).
const ms = t.Integer({ minimum: earliestMs, maximum: Number.MAX_SAFE_INTEGER });
const timestampFilter = t.Object({ lowerMs: ms, upperMs: ms });

export const tunnelModel = {
  createTunnelBody: t.Object({
    // Optional with a namespace token (its own namespace).
    namespaceId: t.Optional(t.String({ maxLength: 64 })),
    role: t.Union([t.Literal("SELECT"), t.Literal("INSERT")]),
  }),
  createTunnelResponse: t.Object({
    tunnel_id: t.String(),
    endpoint: t.String(),
    error,
  }),
  listOpenTunnelsBody: t.Object({
    create_after_time: t.Optional(t.Union([t.String({ maxLength: 64 }), t.Number()])),
  }),
  listOpenTunnelsResponse: t.Object({
    tunnels: t.Array(
      t.Object({
        tunnel_id: t.String(),
        role: t.String(),
        namespace_id: t.String(),
        create_time: t.String(),
      }),
    ),
    error,
  }),
  harOneQuery: t.Object({
    namespaceId: t.String({ maxLength: 64 }),
    eventId: t.String({ maxLength: 64 }),
  }),
  harSetBody: t.Object({
    namespaceId: t.String({ maxLength: 64 }),
    filter: t.Object({
      // Clauses are validated by the store's compiler (whitelisted columns and operators).
      clauses: t.Array(t.Unknown(), { maxItems: 64 }),
      global: timestampFilter,
      focus: t.Optional(t.Nullable(timestampFilter)),
    }),
    filterText: t.Optional(t.String({ maxLength: 4096 })),
    limit: t.Optional(t.Integer({ minimum: 1, maximum: 10_000 })),
  }),
};
