// The benchmark's minimal HTTP server: node's http module, a fixed body of SIZE bytes.
import http from "node:http";

const size = Number(process.argv[3] ?? 1);
const body = Buffer.alloc(size, 97);
http
  .createServer((req, res) => {
    res.writeHead(200, { "content-type": "text/plain", "content-length": size });
    res.end(body);
  })
  .listen(Number(process.argv[2]), "127.0.0.1", () => process.stdout.write("ready\n"));
