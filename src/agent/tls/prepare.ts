import { createAuthority } from "./authority.ts";
import { TlsInterception } from "./interception.ts";
import { ProcessTrust } from "./process-trust.ts";
import { offeredTrust, programTrust } from "./trust.ts";
import { bundlePaths, JDK_STORE_SUFFIXES } from "./trust-paths.ts";

export type PreparedTls = {
  interception: TlsInterception;
  /** Environment additions that make the program trust the run's CA (merged with what it trusted). */
  env: Record<string, string>;
  /** Which opens the notification Worker hands to the supervisor: they may be answered with merged trust. */
  opens: TrustOpens;
  /** Removes the files written for the program (call at exit). */
  cleanup(): void;
};

/** What makes an open worth asking about: a bundle path, a JDK store, or a file the opener's environment names. */
export type TrustOpens = {
  paths: string[];
  suffixes: string[];
  /** The run's own files: named by the program's environment, read as they are. */
  ownDir: string;
};

/**
 * What a run needs to decrypt its program's outbound TLS: a CA made now, in memory; the roots the program itself
 * would trust (upstream certificates are verified against them, so a private CA it trusts keeps working), followed
 * process by process as programs set their own; and the merged trust it is offered, by environment and as the trust
 * files it opens.
 */
export async function prepareTls(env: Record<string, string | undefined>, say: (line: string) => void): Promise<PreparedTls> {
  const authority = await createAuthority();
  const trust = programTrust(env);
  for (const note of trust.notes) say(`TLS: ${note}`);
  const offered = offeredTrust({ env, programPems: trust.pems, caPem: authority.caPem() });
  const processTrust = new ProcessTrust({ caPem: authority.caPem(), runEnv: env, basePems: trust.pems, offered, say });
  return {
    interception: new TlsInterception({ authority, upstreamCa: trust.pems, processTrust }),
    env: offered.env,
    opens: { paths: [...bundlePaths], suffixes: [...JDK_STORE_SUFFIXES], ownDir: offered.dir },
    cleanup: offered.cleanup,
  };
}
