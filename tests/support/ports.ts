import { createServer } from "node:net";

/** Ports this process has handed out, so two servers of one test file are never given the same one. */
const handedOut = new Set<number>();

/**
 * A loopback TCP port nothing listens on now, for a server that must be told its port before it starts (a
 * subprocess, a configuration file). Where the code that listens can report its own port, `listen(0)` is better: a
 * port found here is free only until someone else takes it.
 */
export async function freePort(): Promise<number> {
  for (let attempt = 0; attempt < 100; attempt++) {
    const port = await new Promise<number>((resolve, reject) => {
      const server = createServer();
      server.unref();
      server.once("error", reject);
      server.listen(0, "127.0.0.1", () => {
        const address = server.address();
        server.close(() => (typeof address === "object" && address ? resolve(address.port) : reject(new Error("no port"))));
      });
    });
    if (!handedOut.has(port)) {
      handedOut.add(port);
      return port;
    }
  }
  throw new Error("no free loopback port that was not handed out already");
}
