/**
 * bench:otlp's stand-in collector, in a process of its own so its decoding is not counted as the server's: an
 * OTLP/HTTP receiver decoding each request with the official protobuf definitions. Prints its port, then answers
 * GET /count with the spans it decoded.
 */
import { decodeExportRequest, encodeExportResponse } from "~/services/otlp/otlp-http.ts";

let spans = 0;
const server = Bun.serve({
  port: 0,
  hostname: "127.0.0.1",
  fetch: async (req) => {
    if (req.method === "GET") return Response.json({ spans });
    const decoded = decodeExportRequest(new Uint8Array(await req.arrayBuffer()));
    for (const rs of decoded.resourceSpans ?? []) for (const ss of rs.scopeSpans ?? []) spans += ss.spans?.length ?? 0;
    return new Response(encodeExportResponse() as Uint8Array<ArrayBuffer>, { headers: { "content-type": "application/x-protobuf" } });
  },
});
console.log(JSON.stringify({ port: server.port }));
