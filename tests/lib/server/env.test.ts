import { describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ConfigError, parseAgentConfig, parseConfig } from "~/lib/server/env.ts";

describe("parseConfig", () => {
  test("needs no configuration: defaults, and a session secret generated once and kept", () => {
    const dataDir = mkdtempSync(join(tmpdir(), "tapscope-env-"));
    const first = parseConfig({ DATA_DIR: dataDir });
    expect(first.port).toBe(4000);
    expect(first.publicUrl).toBe("http://localhost:4000");
    expect(first.databaseUrl).toBeUndefined();
    expect(first.sessionSecret.length).toBeGreaterThanOrEqual(32);
    expect(readFileSync(join(dataDir, "session-secret"), "utf8").trim()).toBe(first.sessionSecret);
    expect(parseConfig({ DATA_DIR: dataDir }).sessionSecret).toBe(first.sessionSecret);
  });

  test("bad values are refused with the variable's name", () => {
    const base = { SESSION_SECRET: "x".repeat(32) };
    expect(() => parseConfig({ ...base, PORT: "http" })).toThrow(ConfigError);
    expect(() => parseConfig({ ...base, PORT: "70000" })).toThrow(/PORT must be a whole number/);
    expect(() => parseConfig({ ...base, PUBLIC_URL: "not a url" })).toThrow(/PUBLIC_URL must be a URL/);
    expect(() => parseConfig({ ...base, GOOGLE_CLIENT_ID: "id" })).toThrow(/GOOGLE_CLIENT_SECRET/);
    expect(() => parseConfig({ ...base, EVENT_LOG_MAX_BYTES: "lots" })).toThrow(/EVENT_LOG_MAX_BYTES must be a size of at least 1MiB/);
    expect(() => parseConfig({ ...base, EVENT_LOG_MAX_BYTES: "4096" })).toThrow(/EVENT_LOG_MAX_BYTES/);
  });

  test("the pages' reports get 64 MiB unless EVENT_LOG_MAX_BYTES says otherwise", () => {
    const base = { SESSION_SECRET: "x".repeat(32) };
    expect(parseConfig(base).eventLogMaxBytes).toBe(64 * 1024 ** 2);
    expect(parseConfig({ ...base, EVENT_LOG_MAX_BYTES: "1GiB" }).eventLogMaxBytes).toBe(1024 ** 3);
  });

  test("PUBLIC_URL loses its trailing slash; OAuth is configured only with both halves", () => {
    const config = parseConfig({
      SESSION_SECRET: "x".repeat(32),
      PUBLIC_URL: "https://trace.example.com/",
      GITHUB_CLIENT_ID: "id",
      GITHUB_CLIENT_SECRET: "secret",
    });
    expect(config.publicUrl).toBe("https://trace.example.com");
    expect(config.github?.clientId).toBe("id");
    expect(config.google).toBeUndefined();
  });

  test("billing is off without Stripe variables, on with all four, refused with the missing names in between", () => {
    const base = { SESSION_SECRET: "x".repeat(32) };
    expect(parseConfig(base).billing).toBeUndefined();
    const stripe = {
      STRIPE_SECRET_KEY: "sk_live_x",
      STRIPE_WEBHOOK_SECRET: "whsec_x",
      STRIPE_PRICE_TEAM: "price_a",
      STRIPE_PRICE_SCALE: "price_b",
    };
    expect(parseConfig({ ...base, ...stripe }).billing).toEqual({
      secretKey: "sk_live_x",
      webhookSecret: "whsec_x",
      prices: { "team-20250212": "price_a", "scale-20250212": "price_b" },
      apiUrl: "https://api.stripe.com",
    });
    expect(() => parseConfig({ ...base, STRIPE_SECRET_KEY: "sk", STRIPE_PRICE_TEAM: "p" })).toThrow(
      "billing needs STRIPE_SECRET_KEY, STRIPE_WEBHOOK_SECRET, STRIPE_PRICE_TEAM, STRIPE_PRICE_SCALE together; missing STRIPE_WEBHOOK_SECRET, STRIPE_PRICE_SCALE",
    );
  });
});

describe("parseAgentConfig", () => {
  test("NO_COLOR set to anything but empty keeps terminal output plain (no-color.org)", () => {
    expect(parseAgentConfig({}).isColorRefused).toBe(false);
    expect(parseAgentConfig({ NO_COLOR: "" }).isColorRefused).toBe(false);
    expect(parseAgentConfig({ NO_COLOR: "1" }).isColorRefused).toBe(true);
    expect(parseAgentConfig({ NO_COLOR: "0" }).isColorRefused).toBe(true);
  });
});
