import { connect as netConnect, type Socket } from "node:net";
import { connect as tlsConnect } from "node:tls";
import { PG_SSL_REQUEST, PG_TLS_ACCEPTED } from "./start-tls.ts";

/**
 * Whether a PostgreSQL server would offer SCRAM with channel binding (SCRAM-SHA-256-PLUS) over TLS. A client that
 * takes it (libpq's default, channel_binding=prefer) binds its login to the certificate it saw: behind a decrypting
 * relay that is the relay's, and the server refuses the login. So before the relay answers a program's PostgreSQL TLS
 * it asks the server once per run (a connection of its own: SSLRequest, TLS, a StartupMessage for a user that need not
 * exist, the authentication request read, the connection closed before any password), and passes the program's TLS
 * through untouched when the server offers it, or when it cannot tell.
 */
export type ProbeTarget = { hostname: string; port: number; serverName: string; withRights?: <T>(dial: () => T) => T };

const PROBE_USER = "tapscope_channel_binding_check";
const TIMEOUT_MS = 3000;

/** Per server (address and name): the answer, once asked. */
const answers = new Map<string, Promise<string | null>>();

/** Null when decrypting is safe for this server; otherwise why the program's TLS is passed through. */
export function pgChannelBindingCheck(target: ProbeTarget): Promise<string | null> {
  const key = `${target.hostname}:${target.port}/${target.serverName}`;
  let answer = answers.get(key);
  if (!answer) {
    answer = probe(target);
    answers.set(key, answer);
    if (answers.size > 1024) answers.delete(answers.keys().next().value as string);
  }
  return answer;
}

function startup(): Uint8Array {
  const text = `\0\0\0\0\0\x03\0\0user\0${PROBE_USER}\0database\0postgres\0application_name\0tapscope\0\0`;
  const bytes = new TextEncoder().encode(text);
  new DataView(bytes.buffer).setInt32(0, bytes.length);
  return bytes;
}

function probe(target: ProbeTarget): Promise<string | null> {
  return new Promise((resolve) => {
    let raw: Socket | null = null;
    let secure: ReturnType<typeof tlsConnect> | null = null;
    let done = false;
    const finish = (reason: string | null) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      secure?.destroy();
      raw?.destroy();
      resolve(reason);
    };
    const timer = setTimeout(() => finish("the server's authentication could not be checked for channel binding in time"), TIMEOUT_MS);
    const dial = () => netConnect({ host: target.hostname, port: target.port });
    try {
      raw = target.withRights ? target.withRights(dial) : dial();
    } catch {
      finish("the server's authentication could not be checked for channel binding");
      return;
    }
    raw.once("error", () => finish("the server's authentication could not be checked for channel binding"));
    raw.once("connect", () => raw?.write(PG_SSL_REQUEST));
    raw.once("data", (answer: Buffer) => {
      if (answer[0] !== PG_TLS_ACCEPTED) {
        finish("the server did not accept TLS for the channel binding check");
        return;
      }
      const isIp = /^[\d.]+$|:/.test(target.serverName);
      secure = tlsConnect({ socket: raw!, rejectUnauthorized: false, ...(isIp ? {} : { servername: target.serverName }) });
      secure.once("error", () => finish("the server's authentication could not be checked for channel binding"));
      secure.once("secureConnect", () => secure?.write(startup()));
      let got = Buffer.alloc(0);
      secure.on("data", (chunk: Buffer) => {
        got = Buffer.concat([got, chunk]);
        if (got.length < 5) return;
        const length = got.readInt32BE(1);
        if (got.length < 1 + length && got.length < 4096) return;
        const type = got[0];
        if (type !== 0x52) {
          // Refused before authentication (no pg_hba line for this user, too many connections): it cannot be told.
          finish("channel binding could not be ruled out: the server refused the check's login before authentication");
          return;
        }
        const code = got.readInt32BE(5);
        const mechanisms =
          code === 10
            ? got
                .subarray(9, 1 + length)
                .toString("latin1")
                .split("\0")
            : [];
        finish(
          mechanisms.includes("SCRAM-SHA-256-PLUS")
            ? "the server offers SCRAM channel binding, which a decrypting relay would break"
            : null,
        );
      });
    });
  });
}
