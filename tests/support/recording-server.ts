import { createServer, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";

/** One request as it arrived: what a replayed or copied request must reproduce. */
export type Arrived = { method: string; url: string; headers: IncomingMessage["headers"]; rawHeaders: string[]; body: Buffer };

/**
 * A real HTTP server on a free local port that records every request whole and answers `answer(request)` as text
 * (node:http: the DOM preload replaces the global Response that Bun.serve would need).
 */
export async function startRecordingServer(
  answer: (req: IncomingMessage) => string,
): Promise<{ port: number; arrived: Arrived[]; close: () => void }> {
  const arrived: Arrived[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      arrived.push({
        method: req.method ?? "",
        url: req.url ?? "",
        headers: req.headers,
        rawHeaders: req.rawHeaders,
        body: Buffer.concat(chunks),
      });
      res.setHeader("content-type", "text/plain");
      res.end(answer(req));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { port: (server.address() as AddressInfo).port, arrived, close: () => server.close() };
}
