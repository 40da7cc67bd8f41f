import { describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import {
  clientAssetPath,
  embeddedMigrationsFolder,
  embeddedPgliteAssets,
  isCompiledBinary,
  loadDuckDbNative,
  pruneStaleCaches,
} from "~/lib/server/embedded.ts";
import { tempDir } from "./support.ts";

describe("embedded assets from source", () => {
  test("nothing is embedded: callers fall back to the files on disk", async () => {
    expect(isCompiledBinary).toBe(false);
    expect(embeddedMigrationsFolder()).toBeUndefined();
    expect(embeddedPgliteAssets()).toBeUndefined();
    await loadDuckDbNative(); // a no-op from source
  });

  test("client assets resolve inside build/client only", () => {
    expect(clientAssetPath("../../package.json")).toBeUndefined();
    expect(clientAssetPath("/etc/passwd")).toBeUndefined();
    expect(clientAssetPath("no-such-file.js")).toBeUndefined();
  });
});

describe("pruneStaleCaches", () => {
  test("removes other builds' folders unused for two weeks, keeps the current one, recent ones and anything else", () => {
    const base = tempDir("cache");
    const now = Date.now();
    const day = 24 * 3600 * 1000;
    const make = (name: string, ageDays: number) => {
      const dir = join(base, name);
      mkdirSync(dir);
      writeFileSync(join(dir, "libduckdb.so"), "x");
      const t = new Date(now - ageDays * day);
      utimesSync(dir, t, t);
      return dir;
    };
    make("x64-00000000000000aa", 30); // the current build, even if old
    make("x64-00000000000000bb", 30);
    make("arm64-00000000000000cc", 15);
    make("x64-00000000000000dd", 3);
    make("my-notes", 100);
    const removed = pruneStaleCaches(base, "x64-00000000000000aa", now);
    expect(removed.sort()).toEqual(["arm64-00000000000000cc", "x64-00000000000000bb"]);
    expect(existsSync(join(base, "x64-00000000000000aa"))).toBe(true);
    expect(existsSync(join(base, "x64-00000000000000dd"))).toBe(true);
    expect(existsSync(join(base, "my-notes"))).toBe(true);
  });
});
