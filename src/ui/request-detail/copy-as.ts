import { eventUrl } from "~/lib/event-url.ts";
import type { TracedEvent } from "~/lib/protocol/event.ts";
import { asText, decodeBase64 } from "./body.ts";
import { CONNECTION_HEADERS, HEADER_TOKEN, shellQuote, toCurl } from "./curl.ts";

/** What a replay sends: the request as captured, less the headers that belong to the old connection. */
export type Replayable = {
  method: string;
  url: string;
  headers: Array<[string, string]>;
  /** The body as text when it reads as UTF-8 text, else null (then `base64` holds it). */
  text: string | null;
  base64: string;
  hasBody: boolean;
};

export function replayable(event: TracedEvent): Replayable {
  const bytes = decodeBase64(event.http_req_body);
  const headers = event.http_req_headers.filter(
    ([name, value]) =>
      HEADER_TOKEN.test(name) && !CONNECTION_HEADERS.has(name.toLowerCase()) && !name.startsWith(":") && !/[\r\n\0]/.test(value),
  );
  return {
    method: event.http_req_method || "GET",
    url: eventUrl(event),
    headers,
    text: bytes.length > 0 ? asText(bytes) : "",
    base64: event.http_req_body,
    hasBody: bytes.length > 0,
  };
}

export type CopyFormat = "curl" | "fetch" | "node" | "python" | "httpie";

/** The formats a request can be copied as, in the order the detail lists them. */
export const copyFormats: ReadonlyArray<{ format: CopyFormat; label: string }> = [
  { format: "curl", label: "cURL" },
  { format: "fetch", label: "fetch" },
  { format: "node", label: "Node.js" },
  { format: "python", label: "Python requests" },
  { format: "httpie", label: "HTTPie" },
];

export function copyAs(format: CopyFormat, event: TracedEvent): string {
  switch (format) {
    case "curl":
      return toCurl(event).command;
    case "fetch":
      return toFetch(event);
    case "node":
      return toNode(event);
    case "python":
      return toPython(event);
    case "httpie":
      return toHttpie(event);
  }
}

/** A JavaScript (and JSON) string literal: JSON's escaping is valid JavaScript for any text. */
const js = (value: string): string => JSON.stringify(value);

/** A fetch call for a browser console or Node (an ES module: top-level await). Repeated headers stay repeated. */
export function toFetch(event: TracedEvent): string {
  const r = replayable(event);
  const lines = [`const response = await fetch(${js(r.url)}, {`, `  method: ${js(r.method)},`];
  if (r.headers.length > 0) {
    lines.push("  headers: [");
    for (const [name, value] of r.headers) lines.push(`    [${js(name)}, ${js(value)}],`);
    lines.push("  ],");
  }
  if (r.hasBody)
    lines.push(r.text !== null ? `  body: ${js(r.text)},` : `  body: Uint8Array.from(atob(${js(r.base64)}), (c) => c.charCodeAt(0)),`);
  lines.push("});", "console.log(response.status, await response.text());");
  return lines.join("\n");
}

/** Node's Buffer, named in the snippet's text (this module runs in the browser, which has none). */
const bufferFrom = "Buffer.from";

/** A Node.js script with node:http or node:https: no dependency, every byte of the body as captured. */
export function toNode(event: TracedEvent): string {
  const r = replayable(event);
  const module = r.url.startsWith("https:") ? "node:https" : "node:http";
  // A header sent more than once is one array of values: Node sends each as its own line.
  const grouped = new Map<string, string[]>();
  for (const [name, value] of r.headers) grouped.set(name, [...(grouped.get(name) ?? []), value]);
  // An ES module, as Node's own docs write their examples now (save it as .mjs, or run it in a "type": "module" package).
  const lines = [`import { request } from ${js(module)};`, ""];
  if (r.hasBody)
    lines.push(
      r.text !== null ? `const body = ${bufferFrom}(${js(r.text)}, "utf8");` : `const body = ${bufferFrom}(${js(r.base64)}, "base64");`,
    );
  lines.push(`const req = request(${js(r.url)}, {`, `  method: ${js(r.method)},`, "  headers: {");
  for (const [name, values] of grouped)
    lines.push(`    ${js(name)}: ${values.length === 1 ? js(values.join("")) : `[${values.map(js).join(", ")}]`},`);
  if (r.hasBody) lines.push(`    "Content-Length": body.length,`);
  lines.push("  },", "});");
  lines.push(
    'req.on("response", (res) => {',
    "  const chunks = [];",
    '  res.on("data", (chunk) => chunks.push(chunk));',
    '  res.on("end", () => console.log(res.statusCode, Buffer.concat(chunks).toString()));',
    "});",
    'req.on("error", (error) => console.error(error.message));',
    r.hasBody ? "req.end(body);" : "req.end();",
  );
  return lines.join("\n");
}

/**
 * A Python string literal. JSON's escapes are Python's too, except that JSON leaves non-ASCII as it is: escaped here
 * so the snippet survives any file encoding.
 */
function py(value: string): string {
  return JSON.stringify(value).replace(/[^ -~]/gu, (c) => {
    const code = c.codePointAt(0) ?? 0;
    return code > 0xffff ? `\\U${code.toString(16).padStart(8, "0")}` : `\\u${code.toString(16).padStart(4, "0")}`;
  });
}

/** A Python script with requests. A header sent more than once is joined with commas (cookies with "; "), as HTTP allows. */
export function toPython(event: TracedEvent): string {
  const r = replayable(event);
  const joined = new Map<string, { name: string; values: string[] }>();
  for (const [name, value] of r.headers) {
    const entry = joined.get(name.toLowerCase());
    if (entry) entry.values.push(value);
    else joined.set(name.toLowerCase(), { name, values: [value] });
  }
  const lines = r.hasBody && r.text === null ? ["import base64", "import requests", ""] : ["import requests", ""];
  lines.push("response = requests.request(", `    ${py(r.method)},`, `    ${py(r.url)},`, "    headers={");
  for (const [lower, { name, values }] of joined) lines.push(`        ${py(name)}: ${py(values.join(lower === "cookie" ? "; " : ", "))},`);
  lines.push("    },");
  if (r.hasBody) lines.push(r.text !== null ? `    data=${py(r.text)}.encode("utf-8"),` : `    data=base64.b64decode(${py(r.base64)}),`);
  lines.push(")", "print(response.status_code, response.text)");
  return lines.join("\n");
}

/** An HTTPie command line (POSIX shell). Text bodies go with --raw; binary bodies are piped in from base64. */
export function toHttpie(event: TracedEvent): string {
  const r = replayable(event);
  const parts = ["http"];
  if (!(r.hasBody && r.text === null)) parts.push("--ignore-stdin");
  if (r.hasBody && r.text !== null) parts.push(`--raw ${shellQuote(r.text)}`);
  parts.push(shellQuote(r.method), shellQuote(r.url));
  const named = new Set(r.headers.map(([name]) => name.toLowerCase()));
  // "Name;" is HTTPie's way to send a header with an empty value ("Name:" would remove it).
  for (const [name, value] of r.headers) parts.push(shellQuote(value === "" ? `${name};` : `${name}:${value}`));
  // HTTPie adds a JSON Content-Type and Accept of its own: sent as the request had them, or not at all.
  if (r.hasBody && !named.has("content-type")) parts.push("'Content-Type:'");
  if (!named.has("accept")) parts.push("'Accept:'");
  const command = parts.join(" \\\n  ");
  return r.hasBody && r.text === null ? `printf '%s' ${shellQuote(r.base64)} | base64 -d | ${command}` : command;
}
