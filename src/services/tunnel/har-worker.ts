import { parentPort } from "node:worker_threads";
import { type HarTextsJob, harEntryTexts } from "./har-entry-texts.ts";

/**
 * The HAR writer's thread (har-writer.ts): result frames in, entry texts out, both moved (transferred), never
 * copied.
 */
const port = parentPort;
if (!port) throw new Error("har-worker.ts runs as a Worker (har-writer.ts starts it)");
port.on("message", async ({ id, job }: { id: number; job: HarTextsJob }) => {
  const result = await harEntryTexts(job);
  const moved = "texts" in result ? [...new Set(result.texts.map((t) => t.buffer as ArrayBuffer))] : [];
  port.postMessage({ id, result }, moved);
});
