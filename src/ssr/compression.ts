import { constants, createBrotliCompress, createGzip } from "node:zlib";

/** The encodings pages and assets are sent in, besides none; the server's preference first. */
export const encodings = ["br", "gzip"] as const;
export type Encoding = (typeof encodings)[number];

/** File extension of each encoding's precompressed copy (scripts/build-client.ts writes them). */
export const encodingExtension: Record<Encoding, string> = { br: ".br", gzip: ".gz" };

/** Past this the header is not read: browsers send a few dozen bytes. */
const MAX_ACCEPT_ENCODING = 512;

/**
 * Which of `offered` (in the server's order of preference) to send for an Accept-Encoding header, or null for none:
 * the highest q-value wins, `*` stands for any coding the header does not name, q=0 refuses, and a request without
 * the header gets none.
 */
export function chooseEncoding(acceptEncoding: string | null, offered: readonly Encoding[] = encodings): Encoding | null {
  if (!acceptEncoding) return null;
  const weights = new Map<string, number>();
  for (const item of acceptEncoding.slice(0, MAX_ACCEPT_ENCODING).split(",")) {
    const [coding = "", ...params] = item.split(";").map((part) => part.trim().toLowerCase());
    if (!coding) continue;
    const q = params.find((param) => param.startsWith("q="));
    const weight = q === undefined ? 1 : Number(q.slice(2));
    weights.set(coding === "x-gzip" ? "gzip" : coding, Number.isFinite(weight) ? Math.min(Math.max(weight, 0), 1) : 0);
  }
  let best: Encoding | null = null;
  let bestWeight = 0;
  for (const encoding of offered) {
    const weight = weights.get(encoding) ?? weights.get("*") ?? 0;
    if (weight > bestWeight) {
      best = encoding;
      bestWeight = weight;
    }
  }
  return best;
}

/**
 * `body` compressed as it streams: each chunk is flushed as it comes, so the browser sees the page's head while the
 * rest renders. Made per response; brotli at a middle quality, since this runs on every page view. `signal` ends
 * the compressor when the client goes away.
 */
export function compressStream(body: ReadableStream<Uint8Array>, encoding: Encoding, signal?: AbortSignal): ReadableStream<Uint8Array> {
  const compressor =
    encoding === "br"
      ? createBrotliCompress({ params: { [constants.BROTLI_PARAM_QUALITY]: 5 }, flush: constants.BROTLI_OPERATION_FLUSH })
      : createGzip({ level: 6, flush: constants.Z_SYNC_FLUSH });
  const written = (chunk?: Uint8Array) =>
    new Promise<void>((resolve, reject) => {
      if (chunk) compressor.write(chunk, (err) => (err ? reject(err) : resolve()));
      else {
        compressor.once("end", () => resolve());
        compressor.end();
      }
    });
  return body.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      start(controller) {
        compressor.on("data", (chunk: Buffer) => controller.enqueue(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.length)));
        compressor.on("error", (err) => controller.error(err));
        // Erroring the stream cancels the render that feeds it.
        signal?.addEventListener(
          "abort",
          () => {
            compressor.destroy();
            controller.error(signal.reason);
          },
          { once: true },
        );
      },
      transform: (chunk) => written(chunk),
      flush: () => written(),
    }),
  );
}
