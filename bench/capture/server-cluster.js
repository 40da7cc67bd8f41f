// bench/capture's server for the relay's ceiling: server.js in WORKERS processes (node:cluster), so the program is not
// the one capped at a core. argv: port, body size, workers.
import cluster from "node:cluster";
import http from "node:http";

const [port, size = 1, workers = 2] = process.argv.slice(2).map(Number);
if (cluster.isPrimary) {
  let ready = 0;
  for (let i = 0; i < workers; i++) {
    cluster.fork().on("listening", () => {
      if (++ready === workers) process.stdout.write("ready\n");
    });
  }
} else {
  const body = Buffer.alloc(size, 97);
  http
    .createServer((_req, res) => {
      res.writeHead(200, { "content-type": "text/plain", "content-length": size });
      res.end(body);
    })
    .listen(port, "127.0.0.1");
}
