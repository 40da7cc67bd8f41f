/** A piece of a statement as shown: its words coloured by what they are, never interpreted. */
export type SqlToken = { kind: "keyword" | "string" | "number" | "placeholder" | "comment" | "text"; text: string };

const keywords = new Set(
  (
    "select from where and or not in is null insert into values update set delete create table drop alter index on as " +
    "join left right inner outer full cross group by order having limit offset returning distinct union all case when " +
    "then else end begin commit rollback savepoint release with like ilike between exists primary key default " +
    "conflict do nothing replace ignore asc desc count sum avg min max show explain analyze truncate grant revoke use " +
    "if true false"
  ).split(" "),
);

/** At most this much is coloured; the rest is shown as plain text (a statement is bounded, but a page need not work hard). */
const MAX_TOKENIZED = 16 * 1024;

/**
 * Splits a SQL statement (or a Redis command, whose first word is its command) into tokens for highlighting. Lenient:
 * anything it does not know is text, and joining the tokens' text gives back the statement exactly.
 */
export function sqlTokens(statement: string, isCommand = false): SqlToken[] {
  const src = statement.slice(0, MAX_TOKENIZED);
  const out: SqlToken[] = [];
  const push = (kind: SqlToken["kind"], text: string) => {
    const last = out[out.length - 1];
    if (last && last.kind === kind && kind === "text") last.text += text;
    else out.push({ kind, text });
  };
  let i = 0;
  let isFirstWord = true;
  while (i < src.length) {
    const rest = src.slice(i);
    const match =
      /^--[^\n]*/.exec(rest) ??
      /^\/\*[\s\S]*?(\*\/|$)/.exec(rest) ??
      /^'(?:[^']|'')*'?/.exec(rest) ??
      /^"(?:[^"]|"")*"?/.exec(rest) ??
      /^(\$\d+|\?\d*|:[A-Za-z_]\w*|%s)/.exec(rest) ??
      /^\d+(\.\d+)?/.exec(rest) ??
      /^[A-Za-z_][\w.:-]*/.exec(rest);
    if (!match) {
      push("text", src[i]!);
      i++;
      continue;
    }
    const text = match[0];
    const head = text[0]!;
    if (text.startsWith("--") || text.startsWith("/*")) push("comment", text);
    else if (head === "'") push("string", text);
    else if (head === '"') push(isCommand ? "string" : "text", text);
    else if (/^(\$\d|\?|:[A-Za-z_]|%s)/.test(text)) push("placeholder", text);
    else if (/^\d/.test(text)) push("number", text);
    else if (isCommand ? isFirstWord : keywords.has(text.toLowerCase())) push("keyword", text);
    else push("text", text);
    if (/^[A-Za-z_]/.test(text)) isFirstWord = false;
    i += text.length;
  }
  if (statement.length > src.length) push("text", statement.slice(src.length));
  return out;
}
