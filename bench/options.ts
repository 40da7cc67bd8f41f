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
