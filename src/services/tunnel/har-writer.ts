import { dirname } from "node:path";
import { pathToFileURL } from "node:url";
import { Worker } from "node:worker_threads";
import { AppError } from "~/lib/errors.ts";
import { log } from "~/lib/server/logger.ts";
import { type HarTexts, type HarTextsError, type HarTextsJob, harEntryTexts } from "./har-entry-texts.ts";

/**
 * The Worker's module. In the compiled binary it is an extra entrypoint of the build (scripts/build.ts builds
 * every src file named *-worker.ts), stored next to the entry under the same relative path as in src/.
 */
function harWorkerUrl(): URL {
  if (Bun.main.startsWith("/$bunfs/")) return new URL("./services/tunnel/har-worker.ts", pathToFileURL(`${dirname(Bun.main)}/`));
  return new URL("./har-worker.ts", import.meta.url);
}

type Reply = { id: number; result: HarTexts | { error: HarTextsError } };

/** A thread with nothing to do is stopped after this long: its heap goes back to the system. */
const idleMs = 10_000;

let worker: Worker | null = null;
/** Set when the thread could not start (its module failed to load): entries are then written here. */
let isUnavailable = false;
let lastId = 0;
const waiting = new Map<number, (result: Reply["result"]) => void>();
let idleTimer: ReturnType<typeof setTimeout> | null = null;

function stop(w: Worker, why: string): void {
  if (worker !== w) return;
  worker = null;
  void w.terminate();
  for (const [id, resolve] of waiting) {
    waiting.delete(id);
    resolve({ error: { code: null, message: why } });
  }
}

function started(): Worker | null {
  if (worker || isUnavailable) return worker;
  try {
    const w = new Worker(harWorkerUrl());
    let hasAnswered = false;
    w.unref();
    w.on("message", ({ id, result }: Reply) => {
      hasAnswered = true;
      const resolve = waiting.get(id);
      waiting.delete(id);
      resolve?.(result);
      if (waiting.size > 0) return;
      if (idleTimer) clearTimeout(idleTimer);
      idleTimer = setTimeout(() => stop(w, "the HAR writer stopped"), idleMs).unref();
    });
    w.on("error", (err) => {
      log.error("the HAR writer thread failed", { err: String(err) });
      if (!hasAnswered) isUnavailable = true;
      stop(w, "the HAR writer thread failed");
    });
    w.on("exit", () => stop(w, "the HAR writer thread exited"));
    worker = w;
    return w;
  } catch (err) {
    log.error("no HAR writer thread: HAR entries are written on the main thread", { err: String(err) });
    isUnavailable = true;
    return null;
  }
}

/**
 * A tunnel result frame's events as HAR entry texts (harEntryTexts), written on a Worker: turning large
 * bodies into HAR text (base64 or UTF-8 checks, JSON) takes tens of milliseconds a page and leaves as much
 * garbage, which on the event loop held up every other request. The frame's bytes are moved to the thread, not
 * copied, and must not be used after this call; the texts come back the same way. The tunnel's own errors
 * become AppErrors as a query's would.
 */
export async function writeHarEntries(job: HarTextsJob): Promise<HarTexts> {
  const result = await offThread(job);
  if ("texts" in result) return result;
  if (result.error.code) throw new AppError(result.error.code, result.error.message);
  throw new Error(result.error.message);
}

function offThread(job: HarTextsJob): Promise<HarTexts | { error: HarTextsError }> {
  const w = started();
  if (!w) return harEntryTexts(job);
  if (idleTimer) {
    clearTimeout(idleTimer);
    idleTimer = null;
  }
  const id = ++lastId;
  const { frame } = job;
  // Only a frame that is its whole buffer is moved: moving a view would take the rest of its buffer too.
  const isWhole = frame.byteOffset === 0 && frame.byteLength === frame.buffer.byteLength && frame.buffer instanceof ArrayBuffer;
  const sent = isWhole ? job : { ...job, frame: frame.slice() };
  return new Promise((resolve) => {
    waiting.set(id, resolve);
    w.postMessage({ id, job: sent }, [sent.frame.buffer as ArrayBuffer]);
  });
}
