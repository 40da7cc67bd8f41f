/**
 * The benchmarks' command lines. Every benchmark takes `--smoke`: tiny sizes and a second or so per case, so that
 * tests/bench/smoke.bench.ts can show each one still runs and prints its table. A smoke run's figures mean nothing.
 */
export const isSmoke = process.argv.includes("--smoke");

/** `--name value` from `args`, else `fallback` (`smokeFallback` under `--smoke`). */
export function optionOf(args: string[]): (name: string, fallback: string, smokeFallback?: string) => string {
  return (name, fallback, smokeFallback = fallback) => {
    const i = args.indexOf(`--${name}`);
    return i >= 0 && args[i + 1] ? args[i + 1]! : isSmoke ? smokeFallback : fallback;
  };
}

/** The positional arguments, `--smoke` left out. */
export const positional = process.argv.slice(2).filter((arg) => arg !== "--smoke");

/** The machine's load averages over 1, 5 and 15 minutes ("?" where /proc has none), as benchmarks print them beside their figures. */
export async function loadAverage(): Promise<string> {
  const text = await Bun.file("/proc/loadavg")
    .text()
    .catch(() => "?");
  return text.split(" ").slice(0, 3).join(" ");
}
