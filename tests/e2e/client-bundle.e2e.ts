import { beforeAll, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { buildClient, root } from "./harness.ts";

// The browser bundle must hold no server-only code: database drivers, auth services, secrets handling.
const clientDir = join(root, "build/client");
let manifest: { entry: string; css: string[]; files: string[] };

beforeAll(async () => {
  await buildClient();
  manifest = JSON.parse(readFileSync(join(clientDir, "manifest.json"), "utf8"));
}, 120_000);

test("the manifest names content-hashed files", () => {
  expect(manifest.entry).toMatch(/^\/assets\/entry-client-[a-z0-9]{6,}\.js$/);
  expect(manifest.css[0]).toMatch(/^\/assets\/app-[0-9a-f]{10}\.css$/);
  for (const file of manifest.files) expect(file).toMatch(/-[A-Za-z0-9]{6,}\.(js|css|json)$/);
});

test("no server-only module reaches the client bundle", () => {
  const js = manifest.files
    .filter((f) => f.endsWith(".js"))
    .map((f) => readFileSync(join(clientDir, f), "utf8"))
    .join("\n");
  expect(js.length).toBeGreaterThan(10_000);
  for (const needle of [
    "drizzle",
    "postgres",
    "pglite",
    "@electric-sql",
    "duckdb",
    "clickhouse",
    "nodemailer",
    "sessionSecret",
    "SESSION_SECRET",
    "node:fs",
    "node:crypto",
    "elysia",
    "renderToReadableStream",
  ]) {
    expect(`${needle}: ${js.includes(needle)}`).toBe(`${needle}: false`);
  }
  expect(js.includes("__staticRouterHydrationData") && js.includes("Get started")).toBe(true);
});

test("the stylesheet is built with the dark zinc theme and both font stacks", () => {
  const css = readFileSync(join(clientDir, manifest.css[0]!.replace("/assets/", "")), "utf8");
  expect(css).toContain(".bg-zinc-950");
  expect(css).toContain("--font-mono:");
  expect(css).toContain("--font-sans:");
});
