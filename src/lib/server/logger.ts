/** One line of JSON per log record on stderr; secrets are never passed here. */
type Level = "debug" | "info" | "warn" | "error";
type Fields = Record<string, unknown>;

const levels: Record<Level, number> = { debug: 10, info: 20, warn: 30, error: 40 };
let threshold = levels.info;
let sink: (line: string) => void = (line) => process.stderr.write(`${line}\n`);

export function setLogLevel(level: Level): void {
  threshold = levels[level];
}

/** Tests capture log lines to assert on them. */
export function setLogSink(next: (line: string) => void): () => void {
  const previous = sink;
  sink = next;
  return () => {
    sink = previous;
  };
}

function write(level: Level, msg: string, fields?: Fields): void {
  if (levels[level] < threshold) return;
  const record: Fields = { time: new Date().toISOString(), level, msg, ...fields };
  if (fields?.err instanceof Error) {
    record.err = { name: fields.err.name, message: fields.err.message, stack: fields.err.stack };
  }
  sink(JSON.stringify(record));
}

export const log = {
  debug: (msg: string, fields?: Fields) => write("debug", msg, fields),
  info: (msg: string, fields?: Fields) => write("info", msg, fields),
  warn: (msg: string, fields?: Fields) => write("warn", msg, fields),
  error: (msg: string, fields?: Fields) => write("error", msg, fields),
};
