import { describe, expect, test } from "bun:test";
import { hostname } from "node:os";
import { basename } from "node:path";
import { hostMetadata, readProcessInfo } from "~/agent/event.ts";
import { sniff, tlsServerName } from "~/agent/parse/sniff.ts";
import { isSensitiveHeader, isSensitiveParam, maskSecret, redactQuery, redactTarget } from "~/agent/redact.ts";
import { parseHostEnvironment } from "~/lib/server/env.ts";
import { body, c, s, trace } from "./parse/helpers.ts";

describe("process and host metadata", () => {
  test("read from /proc for a live process", () => {
    const info = readProcessInfo(process.pid);
    expect(info.pid).toBe(process.pid);
    expect(info.executableName).toBe(basename(process.execPath));
    expect(info.executableSize).toBeGreaterThan(1_000_000);
    expect(info.commandLine).toContain("test");
    expect(info.user.length).toBeGreaterThan(0);
  });

  test("a process that is gone gives empty fields, never an error", () => {
    expect(readProcessInfo(2 ** 30)).toEqual({ pid: 2 ** 30, executableName: "", executableSize: 0, commandLine: "", user: "" });
    expect(readProcessInfo(0).executableName).toBe("");
  });

  test("Kubernetes and GCP from the environment when present", () => {
    const none = hostMetadata(parseHostEnvironment({}));
    expect(none).toEqual({
      hostname: hostname(),
      gcp_project: "",
      kubernetes_namespace: "",
      gke_cluster_location: "",
      gke_cluster_name: "",
      gke_node_name: "",
    });
    const gke = hostMetadata(
      parseHostEnvironment({
        KUBERNETES_SERVICE_HOST: "10.0.0.1",
        POD_NAMESPACE: "shop",
        GOOGLE_CLOUD_PROJECT: "acme-prod",
        CLUSTER_NAME: "main",
        CLUSTER_LOCATION: "europe-west1",
        NODE_NAME: "gke-node-1",
      }),
    );
    expect(gke).toMatchObject({
      kubernetes_namespace: "shop",
      gcp_project: "acme-prod",
      gke_cluster_name: "main",
      gke_cluster_location: "europe-west1",
      gke_node_name: "gke-node-1",
    });
  });
});

describe("redaction rules", () => {
  test("headers: the listed ones and credential-looking names, not ordinary ones", () => {
    for (const h of [
      "Authorization",
      "proxy-authorization",
      "Cookie",
      "Set-Cookie",
      "X-Api-Key",
      "X-Auth-Token",
      "X-Amz-Security-Token",
      "X-Github-Token",
      "X-Client-Secret",
    ]) {
      expect([h, isSensitiveHeader(h)]).toEqual([h, true]);
    }
    for (const h of ["Content-Type", "User-Agent", "Accept", "WWW-Authenticate", "Sec-WebSocket-Key", "X-Request-Id"]) {
      expect([h, isSensitiveHeader(h)]).toEqual([h, false]);
    }
  });

  test("query parameters: token-like names, value replaced, the rest byte for byte", () => {
    for (const p of [
      "token",
      "access_token",
      "api_key",
      "apiKey",
      "key",
      "secret",
      "password",
      "sig",
      "signature",
      "code",
      "X-Amz-Signature",
      "client_secret",
    ]) {
      expect([p, isSensitiveParam(p)]).toEqual([p, true]);
    }
    expect(isSensitiveParam("page")).toBe(false);
    expect(redactTarget("/cb?code=abc&state=xyz&page=%20", "redact")).toBe("/cb?code=%5Bredacted%5D&state=xyz&page=%20");
    expect(redactTarget("/p?a=1#frag", "redact")).toBe("/p?a=1#frag");
    expect(redactTarget("/p?token=&x", "redact")).toBe("/p?token=&x");
    expect(redactQuery("key=%E0%A4%A", "redact")).toBe("key=%5Bredacted%5D");
  });

  test("hash mode is deterministic and short", () => {
    expect(maskSecret("s3cret", "hash")).toBe(maskSecret("s3cret", "hash"));
    expect(maskSecret("s3cret", "hash")).not.toBe(maskSecret("other", "hash"));
    expect(maskSecret("s3cret", "hash")).toMatch(/^sha256:[0-9a-f]{16}$/);
  });
});

describe("sniffing", () => {
  const b = (x: string) => new TextEncoder().encode(x);
  test("waits for a whole request line, then decides", () => {
    expect(sniff(b("GE"), 2)).toBe("more");
    expect(sniff(b("PATCH /x HTT"), 12)).toBe("more");
    expect(sniff(b("PATCH /x HTTP/1.1\r\n"), 19)).toBe("http1");
    expect(sniff(b("OPTIONS * HTTP/1.1\r\n"), 20)).toBe("http1");
    expect(sniff(b("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"), 24)).toBe("http2");
    expect(sniff(b("PRI * HTTP/2"), 12)).toBe("more");
    expect(sniff(b("SSH-2.0-OpenSSH\r\n"), 17)).toBe("unknown");
    expect(sniff(b("GET / SPDY/3\r\n"), 14)).toBe("unknown");
    expect(sniff(new Uint8Array([0x16, 3, 1, 0, 200]), 5)).toBe("tls");
    expect(sniff(new Uint8Array([0x16, 3, 9]), 3)).toBe("unknown");
    expect(sniff(new Uint8Array([0, 0, 0, 8, 4, 210, 22, 47]), 8)).toBe("unknown");
    expect(sniff(b("A".repeat(40)), 40)).toBe("unknown");
  });

  test("a truncated ClientHello yields no server name and no error", () => {
    expect(tlsServerName(new Uint8Array([0x16, 3, 1, 0, 100, 1, 0, 0]), 8)).toBe("");
  });
});

describe("HTTP/1 edge cases", () => {
  test("103 Early Hints before the final response", () => {
    const [e] = trace([
      c("GET / HTTP/1.1\r\nHost: h\r\n\r\n"),
      s("HTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"),
    ]).events;
    expect([e!.http_resp_status_code, e!.tags.interim_statuses, body(e!, "resp")]).toEqual([200, "103", "ok"]);
  });

  test("an unsolicited 408 on an idle keep-alive connection is not an error", () => {
    const { events, tracer } = trace([
      c("GET / HTTP/1.1\r\nHost: h\r\n\r\n"),
      s("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"),
      s("HTTP/1.1 408 Request Timeout\r\nConnection: close\r\n\r\n"),
    ]);
    expect(events.map((e) => [e.protocol, e.http_resp_status_code])).toEqual([["http", 200]]);
    expect(tracer.stats().parserGaveUp).toBe(0);
  });

  test("differing Content-Length values make the connection passthrough (request smuggling shape)", () => {
    const { events } = trace([
      c("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\nContent-Length: 5\r\n\r\nabcde"),
      s("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n"),
    ]);
    expect(events.map((e) => e.protocol)).toEqual(["tcp"]);
    expect(events[0]!.tags.passthrough).toContain("content-length");
  });
});
