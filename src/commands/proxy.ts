import { parseHostPort, startReverseProxy } from "~/agent/relay/reverse-proxy.ts";
import { createSession, say } from "~/agent/session.ts";
import { DEFAULT_PAYLOAD_LIMIT } from "~/agent/tracer.ts";
import type { RedactMode } from "~/agent/redact.ts";
import { parseAgentConfig, parseHostEnvironment } from "~/lib/env.ts";
import { errorMessage } from "~/lib/errors.ts";

/**
 * `tapscope proxy --listen :8080 --to 127.0.0.1:3000 [--log] [--service NAME] [--payload-limit BYTES] [--redact MODE]`
 * A reverse proxy that captures the same events as `tapscope run`, for machines where interception is impossible.
 */
const usage = `usage: tapscope proxy --listen [HOST]:PORT --to HOST:PORT [--log] [--service NAME] [--payload-limit BYTES] [--redact redact|hash|keep] [--events-file FILE] [--no-publish]`;

export async function main(args: string[]): Promise<number> {
  let listen: { host: string; port: number } | null = null;
  let to: { host: string; port: number } | null = null;
  let log = false;
  let publish = true;
  let service: string | undefined;
  let payloadLimit = DEFAULT_PAYLOAD_LIMIT;
  let redact: RedactMode = "redact";
  let eventsFile: string | undefined;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    const [flag, inline] = arg.includes("=") ? [arg.slice(0, arg.indexOf("=")), arg.slice(arg.indexOf("=") + 1)] : [arg, undefined];
    const value = () => inline ?? args[++i] ?? "";
    if (flag === "--listen") listen = parseHostPort(value(), "0.0.0.0");
    else if (flag === "--to") to = parseHostPort(value(), "127.0.0.1");
    else if (flag === "--log") log = true;
    else if (flag === "--no-publish") publish = false;
    else if (flag === "--service") service = value();
    else if (flag === "--events-file") eventsFile = value();
    else if (flag === "--payload-limit") payloadLimit = Number(value());
    else if (flag === "--redact") {
      const v = value();
      if (v !== "redact" && v !== "hash" && v !== "keep") return fail("--redact must be redact, hash or keep");
      redact = v;
    } else return fail(`unknown option ${flag}`);
  }
  if (!listen || !to) return fail("--listen and --to are both needed");
  if (!Number.isInteger(payloadLimit) || payloadLimit < 0) return fail("--payload-limit needs a whole number of bytes");
  const agent = parseAgentConfig();
  const session = createSession({
    agent,
    host: parseHostEnvironment(),
    service: service ?? agent.service ?? `proxy-${to.port}`,
    redact,
    payloadLimit,
    log,
    eventsFile,
    publish,
  });
  let proxy;
  try {
    proxy = startReverseProxy({ listenHost: listen.host, listenPort: listen.port, targetHost: to.host, targetPort: to.port, observer: session.tracer });
  } catch (err) {
    say(`cannot listen on ${listen.host}:${listen.port}: ${errorMessage(err)}`);
    return 1;
  }
  say(`proxying ${proxy.hostname}:${proxy.port} -> ${to.host}:${to.port}`);
  const signal = await new Promise<string>((done) => {
    for (const s of ["SIGINT", "SIGTERM", "SIGHUP"] as const) process.once(s, () => done(s));
  });
  proxy.stop();
  await session.finish();
  return signal === "SIGINT" ? 130 : 0;
}

function fail(message: string): number {
  process.stderr.write(`tapscope: ${message}\n${usage}\n`);
  return 2;
}
