import { writeSync } from "node:fs";

/** One short line for the user on stderr, `tapscope: ` first. */
export const say = (line: string) => {
  try {
    writeSync(2, `tapscope: ${line}\n`);
  } catch {}
};
