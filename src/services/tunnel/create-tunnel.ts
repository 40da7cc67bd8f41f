import { randomUUID } from "node:crypto";
import type { OpenTunnels } from "~/engines/workers/open-tunnels.ts";
import { AppError } from "~/lib/errors.ts";
import type { CreateTunnelResponse, TunnelRole } from "~/lib/protocol/api/tunnel.ts";
import { tunnelPath } from "~/lib/protocol/tunnel.ts";
import { websocketUrl } from "~/lib/websocket-url.ts";
import { grantsOf } from "~/services/access/grants.ts";
import { requireNamespaceAccess } from "~/services/access/require-namespace-access.ts";
import type { Principal } from "~/services/auth/principal.ts";
import type { ServiceContext } from "~/services/context.ts";
import { issueTunnelTicket, TUNNEL_TICKET_TTL_MS } from "./tunnel-ticket.ts";

export function principalKey(principal: Principal): string {
  if (principal.kind === "user") return `user:${principal.userId}`;
  return `${principal.kind}:${principal.tokenId}`;
}

/**
 * CreateTunnel: a member of the namespace (or a token of it or of its org) gets a WebSocket endpoint bound
 * to {who, namespace, role} by a single-use ticket. SELECT reads; INSERT writes (any token holder may inject
 * events), which for users needs write access to the namespace.
 */
export async function createTunnel({
  ctx,
  tunnels,
  principal,
  namespaceId,
  role,
}: {
  ctx: ServiceContext;
  /** The open tunnels ListOpenTunnels answers from. */
  tunnels: OpenTunnels;
  principal: Principal;
  namespaceId: string | undefined;
  role: TunnelRole;
}): Promise<CreateTunnelResponse> {
  if (role !== "SELECT" && role !== "INSERT") throw new AppError("BAD_REQUEST", 'role must be "SELECT" or "INSERT"');
  namespaceId ??= principal.kind === "namespaceToken" ? principal.namespaceId : undefined;
  if (!namespaceId) throw new AppError("BAD_REQUEST", "namespaceId is required");
  const access = await requireNamespaceAccess({
    ctx,
    principal,
    namespaceId,
    write: role === "INSERT" && principal.kind === "user",
    forbiddenMessage: "forbidden: you do not have write access to this namespace",
  });
  const tunnelId = randomUUID();
  const key = principalKey(principal);
  const ticket = issueTunnelTicket(
    ctx.config.sessionSecret,
    {
      tunnelId,
      principalKey: key,
      namespaceId: access.namespaceId,
      orgId: access.orgId,
      role,
      grants: grantsOf(principal, { namespaceId: access.namespaceId, write: role === "INSERT" }),
    },
    ctx.now(),
  );
  tunnels.created({
    tunnelId,
    principalKey: key,
    namespaceId: access.namespaceId,
    role,
    createTimeMs: ctx.now().getTime(),
    expiresAtMs: ctx.now().getTime() + TUNNEL_TICKET_TTL_MS,
  });
  return { tunnel_id: tunnelId, endpoint: websocketUrl(ctx.config.publicUrl, `${tunnelPath}?ticket=${encodeURIComponent(ticket)}`) };
}
