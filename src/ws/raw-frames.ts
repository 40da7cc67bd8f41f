import type { ServerWebSocket } from "bun";
import { log } from "~/lib/server/logger.ts";

/** A frame as the socket delivered it: text as a string, binary as bytes. */
export type RawFrame = string | Buffer;

/**
 * Elysia JSON-parses a text frame that looks like JSON before a route's `message` runs, so a size limit checked
 * there comes after the parse. Called from `open`, this hands the socket's frames to `onFrame` as they arrived
 * (Elysia's per-socket dispatcher lives on the upgrade data), so text and binary frames meet the same checks
 * before anything parses them. A handler's failure is logged, as Elysia's dispatcher would have caught it.
 */
export function takeRawFrames(raw: ServerWebSocket<unknown>, onFrame: (frame: RawFrame) => void | Promise<void>): void {
  const failed = (err: unknown) => log.error("socket message failed", { err });
  (raw.data as { message?: (ws: unknown, frame: RawFrame) => void }).message = (_ws, frame) => {
    try {
      const done = onFrame(frame);
      if (done instanceof Promise) done.catch(failed);
    } catch (err) {
      failed(err);
    }
  };
}
