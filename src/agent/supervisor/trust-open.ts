import { closeSync, openSync } from "node:fs";
import { errorMessage } from "~/lib/errors.ts";
import { O_CLOEXEC } from "../seccomp/ffi.ts";
import type { TrustOpenMsg } from "../seccomp/messages.ts";
import { addFdAndReply, isValid, replyContinue } from "../seccomp/notif.ts";
import { type Context, processOf } from "./context.ts";

let hasSaidFailure = false;

/**
 * A process opens a file that may hold its trust (the Worker picked it by path): answered with the merged file its
 * trust calls for, installed as the open's result with the flags it asked for, or let run as it is. Never fails the
 * open: whatever goes wrong here, the program reads its own file.
 */
export function handleTrustOpen(ctx: Context, m: TrustOpenMsg): void {
  let file: string | null = null;
  try {
    file = ctx.tls?.answerOpen(processOf(m.pid), m.path) ?? null;
  } catch (error) {
    if (!hasSaidFailure)
      ctx.say(`TLS: the trust for an open of ${m.path} could not be made (${errorMessage(error)}); the program reads its own file`);
    hasSaidFailure = true;
  }
  if (!file) {
    replyContinue(ctx.listener, m.id);
    return;
  }
  let fd: number;
  try {
    fd = openSync(file, "r");
  } catch {
    replyContinue(ctx.listener, m.id);
    return;
  }
  try {
    if (!isValid(ctx.listener, m.id) || addFdAndReply(ctx.listener, m.id, fd, m.isCloexec ? O_CLOEXEC : 0) < 0) {
      replyContinue(ctx.listener, m.id);
    }
  } finally {
    closeSync(fd);
  }
}
