import { describe, expect, test } from "bun:test";
import { brotliDecompressSync, constants, gunzipSync } from "node:zlib";
import { chooseEncoding, compressStream, type Encoding } from "~/ssr/compression.ts";

describe("chooseEncoding", () => {
  test("what browsers send: brotli where offered, else gzip", () => {
    expect(chooseEncoding("gzip, deflate, br, zstd")).toBe("br");
    expect(chooseEncoding("gzip, deflate")).toBe("gzip");
    expect(chooseEncoding("gzip, deflate, br", ["gzip"])).toBe("gzip");
    expect(chooseEncoding("br", ["gzip"])).toBeNull();
  });

  test("no header, identity or an unknown coding: sent as it is", () => {
    expect(chooseEncoding(null)).toBeNull();
    expect(chooseEncoding("")).toBeNull();
    expect(chooseEncoding("identity")).toBeNull();
    expect(chooseEncoding("deflate, compress")).toBeNull();
  });

  test("q-values decide; q=0 refuses; * stands for the codings not named", () => {
    expect(chooseEncoding("br;q=0.5, gzip;q=1")).toBe("gzip");
    expect(chooseEncoding("br;q=0, gzip")).toBe("gzip");
    expect(chooseEncoding("br;q=0, gzip;q=0")).toBeNull();
    expect(chooseEncoding("*")).toBe("br");
    expect(chooseEncoding("*;q=0.1, br;q=0")).toBe("gzip");
    expect(chooseEncoding("GZIP ; Q=0.8, x-gzip;q=0.1")).toBe("gzip");
    expect(chooseEncoding("x-gzip")).toBe("gzip");
  });

  test("a malformed or oversized header chooses nothing it does not name", () => {
    expect(chooseEncoding("br;q=abc, gzip;q=0.2")).toBe("gzip");
    expect(chooseEncoding(",,;;,br;q=")).toBeNull();
    expect(chooseEncoding(`${"x, ".repeat(1000)}br`)).toBeNull();
  });
});

/** A stream of `parts` that waits for `release` before it closes. */
function heldStream(parts: string[], release: Promise<void>): ReadableStream<Uint8Array> {
  return new ReadableStream({
    async start(controller) {
      for (const part of parts) controller.enqueue(new TextEncoder().encode(part));
      await release;
      controller.close();
    },
  });
}

describe("compressStream", () => {
  /** What the bytes so far decode to, though the stream has not ended. */
  const decodeSoFar = (encoding: Encoding, bytes: Uint8Array) =>
    encoding === "br"
      ? brotliDecompressSync(bytes, { finishFlush: constants.BROTLI_OPERATION_FLUSH }).toString()
      : gunzipSync(bytes, { finishFlush: constants.Z_SYNC_FLUSH }).toString();

  for (const encoding of ["br", "gzip"] as const) {
    test(`${encoding}: what is written so far reaches the browser before the page is finished`, async () => {
      let finish = () => {};
      const held = new Promise<void>((resolve) => {
        finish = resolve;
      });
      const head = `<!DOCTYPE html><html><head><title>t</title></head><body>${"<p>row</p>".repeat(300)}`;
      const reader = compressStream(heldStream([head], held), encoding).getReader();
      // The source is still open: a compressor that waits for its end sends nothing here, and the read never returns.
      const received: Uint8Array[] = [];
      while (decodeSoFar(encoding, Buffer.concat(received)) !== head) {
        const next = await Promise.race([reader.read(), Bun.sleep(3000).then(() => null)]);
        if (!next || next.done) throw new Error(`only ${decodeSoFar(encoding, Buffer.concat(received)).length} characters arrived`);
        received.push(next.value);
      }
      finish();
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        received.push(value);
      }
      expect((encoding === "br" ? brotliDecompressSync : gunzipSync)(Buffer.concat(received)).toString()).toBe(head);
    });
  }

  test("the whole stream decodes to the same bytes, and compresses", async () => {
    const page = `<html>${"<div class='flex min-h-dvh'>row</div>".repeat(2000)}</html>`;
    const body = compressStream(heldStream([page.slice(0, 5000), page.slice(5000)], Promise.resolve()), "gzip");
    const bytes = new Uint8Array(await new Response(body).arrayBuffer());
    expect(gunzipSync(bytes).toString()).toBe(page);
    expect(bytes.length).toBeLessThan(page.length / 10);
  });

  test("a client that goes away ends the stream and the render that feeds it", async () => {
    const abort = new AbortController();
    let isCancelled = false;
    const render = new ReadableStream<Uint8Array>({
      start: (controller) => controller.enqueue(new TextEncoder().encode("<html>")),
      cancel: () => {
        isCancelled = true;
      },
    });
    const reader = compressStream(render, "br", abort.signal).getReader();
    await reader.read();
    abort.abort();
    const ended = reader.read().then(
      () => "ended",
      () => "ended",
    );
    expect(await Promise.race([ended, Bun.sleep(5000).then(() => "still open")])).toBe("ended");
    for (let i = 0; i < 100 && !isCancelled; i++) await Bun.sleep(10);
    expect(isCancelled).toBe(true);
  });
});
