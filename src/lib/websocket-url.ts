/**
 * The WebSocket URL of `path` (a path with its query) under an http(s) base URL: wss for https, ws otherwise.
 * A path in the base is kept as a prefix, as every other URL built from the public URL keeps it (a server
 * behind a proxy at /tapscope). Browser-safe.
 */
export function websocketUrl(base: string, path: string): string {
  const url = new URL(base);
  url.protocol = url.protocol === "https:" ? "wss:" : "ws:";
  url.search = "";
  url.hash = "";
  return `${url.toString().replace(/\/+$/, "")}${path}`;
}
