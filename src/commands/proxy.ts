import { parseHostPort, startReverseProxy } from "~/agent/relay/reverse-proxy.ts";
import { say } from "~/agent/say.ts";
import { createSession } from "~/agent/session.ts";
import { errorMessage } from "~/lib/errors.ts";
import { parseAgentConfig, parseHostEnvironment } from "~/lib/server/env.ts";
import { parseFlags } from "~/lib/server/flags.ts";
import { captureFlags, captureOptions } from "./capture-flags.ts";

/**
 * `tapscope proxy --listen :8080 --to 127.0.0.1:3000 [--log] [--service NAME] [--payload-limit BYTES] [--redact MODE]`
 * A reverse proxy that captures the same events as `tapscope run`, for machines where interception is impossible.
 */
const usage = `usage: tapscope proxy --listen [HOST]:PORT --to HOST:PORT [--log] [--service NAME] [--payload-limit BYTES] [--ws-message-rate N] [--redact redact|hash|keep] [--events-file FILE] [--no-publish]`;

const proxyFlags = {
  ...captureFlags,
  listen: { type: "string" },
  to: { type: "string" },
  help: { type: "boolean", short: "h" },
} as const;

export async function main(args: string[]): Promise<number> {
  const parsed = parseFlags(args, proxyFlags);
  if (!parsed.ok) return fail(parsed.error);
  if (parsed.flags.help) {
    process.stdout.write(`${usage}\n`);
    return 0;
  }
  const capture = captureOptions(parsed.flags);
  if (!capture.ok) return fail(capture.error);
  const listen = parseHostPort(parsed.flags.listen ?? "", "0.0.0.0");
  const to = parseHostPort(parsed.flags.to ?? "", "127.0.0.1");
  if (!listen || !to) return fail("--listen and --to are both needed");
  const agent = parseAgentConfig();
  const session = createSession({
    ...capture.options,
    agent,
    host: parseHostEnvironment(),
    service: capture.options.service ?? agent.service ?? `proxy-${to.port}`,
  });
  let proxy: ReturnType<typeof startReverseProxy>;
  try {
    proxy = startReverseProxy({
      listenHost: listen.host,
      listenPort: listen.port,
      targetHost: to.host,
      targetPort: to.port,
      observer: session.tracer,
    });
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
