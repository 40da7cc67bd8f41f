import { describe, expect, test } from "bun:test";
import { ConfigError, parseConfig } from "~/lib/server/env.ts";
import { parseTraceparent, requestLink, spanIdOf, splitHostPort } from "~/services/otlp/spans.ts";
import { decodeState } from "~/ui/explorer/explorer-state.ts";

describe("OTLP mapping details", () => {
  test("traceparent: version 00 exactly, no all-zero ids, no version ff; later versions may carry more fields", () => {
    const trace = "4bf92f3577b34da6a3ce929d0e0e4736";
    const span = "00f067aa0ba902b7";
    expect(parseTraceparent(`00-${trace}-${span}-01`)).not.toBeNull();
    expect(parseTraceparent(`00-${trace.toUpperCase()}-${span}-01`)).not.toBeNull();
    expect(parseTraceparent(`01-${trace}-${span}-01-extra`)).not.toBeNull();
    for (const bad of [
      `00-${trace}-${span}-01-extra`,
      `ff-${trace}-${span}-01`,
      `00-${"0".repeat(32)}-${span}-01`,
      `00-${trace}-${"0".repeat(16)}-01`,
      `00-${trace.slice(1)}-${span}-01`,
      "garbage",
    ]) {
      expect(parseTraceparent(bad), bad).toBeNull();
    }
  });

  test("span ids are 8 bytes, stable, and differ between events", () => {
    const a = spanIdOf("6f1c1f1e-8a7b-4c1e-9c2d-0a1b2c3d4e5f");
    expect(a).toHaveLength(8);
    expect(Buffer.from(spanIdOf("6f1c1f1e-8a7b-4c1e-9c2d-0a1b2c3d4e5f")).equals(Buffer.from(a))).toBe(true);
    expect(Buffer.from(spanIdOf("6f1c1f1e-8a7b-4c1e-9c2d-0a1b2c3d4e60")).equals(Buffer.from(a))).toBe(false);
  });

  test("addresses split into address and port, IPv6 too", () => {
    expect(splitHostPort("10.0.0.7:443")).toEqual({ address: "10.0.0.7", port: 443 });
    expect(splitHostPort("[::1]:8080")).toEqual({ address: "::1", port: 8080 });
    expect(splitHostPort("api.example.com")).toEqual({ address: "api.example.com", port: -1 });
    expect(splitHostPort("fe80::1")).toEqual({ address: "fe80::1", port: -1 });
  });

  test("the link back opens the requests explorer on that one event, around its time", () => {
    const id = "6f1c1f1e-8a7b-4c1e-9c2d-0a1b2c3d4e5f";
    const timeMicros = Date.UTC(2026, 10, 27, 10, 0, 0, 500) * 1000 + 7;
    const link = new URL(requestLink("https://tapscope.example", "shop eu", id, timeMicros));
    expect(link.pathname).toBe("/dashboard/shop%20eu/requests");
    const state = decodeState(link.searchParams.get("filter"), Date.UTC(2026, 10, 27, 12));
    expect(state?.text).toEqual([`id == "${id}"`]);
    expect(state?.clauses).toEqual([]);
    expect(state?.global.startMs).toBeLessThan(timeMicros / 1000);
    expect(state?.global.endMs).toBeGreaterThan(timeMicros / 1000);
  });

  test("the standard exporter variables: traces endpoint used as is, base endpoint gets /v1/traces, bad values refused by name", () => {
    const base = { DATA_DIR: "/tmp/x", SESSION_SECRET: "0123456789abcdef0123" };
    expect(parseConfig(base).otlp).toBeUndefined();
    expect(parseConfig({ ...base, OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318/" }).otlp).toEqual({
      url: "http://c:4318/v1/traces",
      headers: [],
      protocol: "http/protobuf",
      timeoutMs: 10_000,
    });
    const both = parseConfig({
      ...base,
      OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318",
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://t:4318/custom",
      OTEL_EXPORTER_OTLP_HEADERS: "a=1, b=x%3Dy",
      OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
      OTEL_EXPORTER_OTLP_TIMEOUT: "2500",
    }).otlp;
    expect(both).toEqual({
      url: "http://t:4318/custom",
      headers: [
        ["a", "1"],
        ["b", "x=y"],
      ],
      protocol: "http/json",
      timeoutMs: 2500,
    });
    expect(() => parseConfig({ ...base, OTEL_EXPORTER_OTLP_ENDPOINT: "http://c", OTEL_EXPORTER_OTLP_PROTOCOL: "grpc" })).toThrow(
      "gRPC is not supported",
    );
    expect(() => parseConfig({ ...base, OTEL_EXPORTER_OTLP_ENDPOINT: "http://c", OTEL_EXPORTER_OTLP_HEADERS: "novalue" })).toThrow(
      ConfigError,
    );
    expect(() => parseConfig({ ...base, OTEL_EXPORTER_OTLP_ENDPOINT: "not a url" })).toThrow("OTEL_EXPORTER_OTLP_ENDPOINT must be a URL");
    expect(() => parseConfig({ ...base, OTLP_DESTINATIONS: "some" })).toThrow("OTLP_DESTINATIONS");
  });
});
