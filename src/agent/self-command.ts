/** How to start this same program again: the compiled binary, or bun with the entry script in development. */
export function selfCommand(): string[] {
  const main = Bun.main;
  if (main.startsWith("/$bunfs/") || main.startsWith("B:/~BUN/")) return [process.execPath];
  return [process.execPath, main];
}
