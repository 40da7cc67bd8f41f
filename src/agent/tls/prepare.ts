import { createAuthority } from "./authority.ts";
import { TlsInterception } from "./interception.ts";
import { bundlePaths, offeredTrust, programTrust } from "./trust.ts";

export type PreparedTls = {
  interception: TlsInterception;
  /** Environment additions that make the program trust the run's CA (merged with what it trusted). */
  env: Record<string, string>;
  /** The merged bundle, answered for opens of the well-known bundle paths. */
  bundle: { file: string; paths: string[] };
  /** Resolves when every file the program is pointed at exists: launch() waits for it before the program runs. */
  ready: Promise<void>;
  /** Removes the files written for the program (call at exit). */
  cleanup(): void;
};

/**
 * What a run needs to decrypt its program's outbound TLS: a CA made now, in memory; the roots the program itself
 * would trust (upstream certificates are verified against them, so a private CA it trusts keeps working); and the
 * merged trust it is offered, by environment and as the bundle file it opens.
 */
export async function prepareTls(env: Record<string, string | undefined>, say: (line: string) => void): Promise<PreparedTls> {
  const authority = await createAuthority();
  const trust = programTrust(env);
  for (const note of trust.notes) say(`TLS: ${note}`);
  const offered = await offeredTrust({ env, programPems: trust.pems, caPem: authority.caPem() });
  for (const note of offered.notes) say(`TLS: ${note}`);
  return {
    interception: new TlsInterception({ authority, upstreamCa: trust.pems }),
    env: offered.env,
    bundle: { file: offered.bundleFile, paths: [...bundlePaths] },
    ready: offered.ready,
    cleanup: offered.cleanup,
  };
}
