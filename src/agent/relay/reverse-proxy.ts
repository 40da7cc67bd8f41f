import type { Socket, TCPSocketListener } from "bun";
import { legOptions } from "./leg-options.ts";
import { type ConnectionObserver, nowMicros } from "./observer.ts";
import { type LegData, Pipe } from "./pipe.ts";
import { formatSockAddr, fromHostPort } from "./sockaddr.ts";

/**
 * A TCP reverse proxy over the same relay and observer as `tapscope run`: each client connection to
 * `listen` is relayed byte for byte to `target`. The fallback where interception is impossible.
 */
export type ReverseProxyOptions = {
  listenHost: string;
  listenPort: number;
  targetHost: string;
  targetPort: number;
  observer: ConnectionObserver | null;
  pid?: number;
};

export type ReverseProxy = { port: number; hostname: string; stop(): void };

export function startReverseProxy(options: ReverseProxyOptions): ReverseProxy {
  let nextId = 0;
  const target = `${options.targetHost.includes(":") ? `[${options.targetHost}]` : options.targetHost}:${options.targetPort}`;
  const server: TCPSocketListener<LegData> = Bun.listen<LegData>(
    legOptions(
      { hostname: options.listenHost, port: options.listenPort },
      {
        open(client: Socket<LegData>) {
          const pipe = new Pipe(
            {
              id: ++nextId,
              direction: "inbound",
              clientAddr: formatSockAddr(fromHostPort(client.remoteAddress, client.remotePort)),
              serverAddr: target,
              pid: options.pid ?? 0,
              startedAt: nowMicros(),
              connectedAt: 0,
            },
            options.observer,
          );
          pipe.attach("client", client);
          Bun.connect<LegData>(
            legOptions(
              { hostname: options.targetHost, port: options.targetPort },
              {
                open(upstream: Socket<LegData>) {
                  pipe.attach("server", upstream);
                },
                connectError() {
                  pipe.fail("upstream unreachable");
                },
              },
            ),
          ).catch(() => pipe.fail("upstream unreachable"));
        },
      },
    ),
  );
  return { port: server.port, hostname: server.hostname, stop: () => server.stop(true) };
}

/** "8080", ":8080", "0.0.0.0:8080", "[::1]:8080", "localhost:8080" -> host and port. */
export function parseHostPort(text: string, defaultHost: string): { host: string; port: number } | null {
  const trimmed = text.trim();
  const m = /^(?:(?:\[([^\]]+)\]|([^:[\]]*)):)?(\d+)$/.exec(trimmed);
  if (!m) return null;
  const port = Number(m[3]);
  if (!Number.isInteger(port) || port < 0 || port > 65535) return null;
  return { host: m[1] ?? (m[2] || defaultHost), port };
}
