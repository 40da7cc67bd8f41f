import type { SocketHandler, TCPSocketConnectOptions, TCPSocketListenOptions } from "bun";
import { type LegData, legHandlers } from "./pipe.ts";

/** Where a relay leg listens or connects: an address, or a socket made with libc (bound and listening, or connecting). */
export type LegEndpoint = { hostname: string; port: number } | { fd: number };

/** Good for Bun.listen and Bun.connect alike. */
export type LegSocketOptions = TCPSocketListenOptions<LegData> & TCPSocketConnectOptions<LegData>;

/**
 * Options for a relay leg's Bun.listen or Bun.connect: the pipe's handlers with `handlers` over them, and half-open
 * connections kept, so each direction ends on its own as it would between the two programs.
 */
export function legOptions(at: LegEndpoint, handlers: Partial<SocketHandler<LegData>>): LegSocketOptions {
  const socket: SocketHandler<LegData> = { ...legHandlers, ...handlers };
  if ("fd" in at) {
    // Bun takes `fd` in place of hostname and port; its types declare only the address form.
    return { fd: at.fd, allowHalfOpen: true, socket } as unknown as LegSocketOptions;
  }
  return { hostname: at.hostname, port: at.port, allowHalfOpen: true, socket };
}
