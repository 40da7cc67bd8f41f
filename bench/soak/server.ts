// The soak's server: `tapscope server` itself (src/commands/server.ts, the same defaults as `npm start`), with
// its memory line at debug level every 30 s so the benchmark can read it.
import { main } from "~/commands/server.ts";
import { setLogLevel } from "~/lib/server/logger.ts";

setLogLevel("debug");
const i = process.argv.indexOf("--memory-log-ms");
process.exit(await main([], { memoryLogMs: i > 0 ? Number(process.argv[i + 1]) : 30_000 }));
