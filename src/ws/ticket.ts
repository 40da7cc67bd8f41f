import { AppError } from "~/lib/errors.ts";
import { type SocketChannelName, socketChannels } from "~/lib/protocol/sockets.ts";
import { findRevokedGrants, type Grant, grantEndedReason, grantKey } from "~/services/access/grants.ts";
import type { ServiceContext } from "~/services/context.ts";
import { isFirstUseEverywhere } from "~/services/tickets/signed-ticket.ts";

type TicketChannel = { [N in SocketChannelName]: (typeof socketChannels)[N] extends { ticketFrom: string } ? N : never }[SocketChannelName];

/**
 * The claims of a ticket socket's `?ticket=` (lib/protocol/sockets.ts), or 401: missing, forged, spent (here or on
 * another node), expired, made for another socket, or standing on a session, token, membership or namespace that has
 * ended since it was issued. Checked before the upgrade, so a credential that ended before its socket opens never has
 * it served; one that ends later closes it (GrantedSockets).
 */
export async function admitTicket<C extends { grants: Grant[] }>({
  ctx,
  channel,
  ticket,
  redeem,
}: {
  ctx: ServiceContext;
  channel: TicketChannel;
  ticket: string | undefined;
  /** The channel's own redeem (its purpose and claims' shape): spends the ticket, or null. */
  redeem: (ticket: string) => C | null;
}): Promise<C> {
  const issuer = socketChannels[channel].ticketFrom;
  const claims = ticket ? redeem(ticket) : null;
  if (!claims || !(await isFirstUseEverywhere(ticket ?? "", ctx.spendTicketEverywhere))) {
    throw new AppError("UNAUTHORIZED", `${channel} ticket missing, invalid, used or expired: call ${issuer} again`);
  }
  if (claims.grants.length > 0) {
    const ended = await findRevokedGrants({ ctx, grants: claims.grants });
    const grant = claims.grants.find((g) => ended.has(grantKey(g)));
    if (grant) throw new AppError("UNAUTHORIZED", `${channel} ticket refused: ${grantEndedReason[grant.kind]}`);
  }
  return claims;
}
