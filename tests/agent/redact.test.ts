import { describe, expect, test } from "bun:test";
import {
  isSensitiveHeader,
  isSensitiveJsonKey,
  isSensitiveParam,
  mayNameSecret,
  multipartBoundary,
  redactCommandLine,
  redactHeaders,
  redactJsonText,
  redactMultipart,
  redactQuery,
} from "~/agent/redact.ts";

/** The redaction rule table (src/agent/redact.ts, docs/adr/0014-redaction-rules.md), case by case. */
describe("one name rule", () => {
  test("headers: vendor key headers, Authentication and credential-looking names are secret", () => {
    for (const h of [
      "Ocp-Apim-Subscription-Key",
      "X-Functions-Key",
      "X-RapidAPI-Key",
      "Authentication",
      "Authorization",
      "X-Session-Id",
      "X-CSRF-Token",
      "X-Amz-Security-Token",
      "X-Hub-Signature-256",
      "Cookie",
      "X-Db-Password",
      "X-Auth",
      "apikey",
      "X-Pin",
    ]) {
      expect([h, isSensitiveHeader(h)]).toEqual([h, true]);
    }
  });

  test("headers that merely look alike stay visible", () => {
    for (const h of [
      "Content-Length",
      "Keep-Alive",
      "Content-Type",
      "Accept",
      "User-Agent",
      "WWW-Authenticate",
      "Sec-WebSocket-Key",
      "Sec-WebSocket-Accept",
      "Idempotency-Key",
      ":authority",
      "X-Author",
      "X-Request-Id",
      "Cache-Control",
      "X-Forwarded-For",
      "ETag",
    ]) {
      expect([h, isSensitiveHeader(h)]).toEqual([h, false]);
    }
  });

  test("query parameters and form fields: the same rule, plus OAuth's code", () => {
    for (const p of ["passphrase", "private_key", "privateKey", "pass", "pin", "code", "key", "client_secret", "auth", "otp", "session"]) {
      expect([p, isSensitiveParam(p)]).toEqual([p, true]);
    }
    for (const p of ["page", "keyword", "monkey", "spin", "passenger", "author", "zip_code", "design", "q"]) {
      expect([p, isSensitiveParam(p)]).toEqual([p, false]);
    }
    expect(redactQuery("passphrase=a%20b&private_key=xyz&page=2", "redact")).toBe(
      "passphrase=%5Bredacted%5D&private_key=%5Bredacted%5D&page=2",
    );
  });

  test("JSON keys: pass and pin are secret; descriptions of a credential and a bare key or code are data", () => {
    for (const k of ["pass", "pin", "password", "privateKey", "client_secret", "sessionToken", "apiKey"]) {
      expect([k, isSensitiveJsonKey(k)]).toEqual([k, true]);
    }
    for (const k of ["key", "code", "token_type", "password_expires_at", "api_key_id", "user", "spin", "author"]) {
      expect([k, isSensitiveJsonKey(k)]).toEqual([k, false]);
    }
  });

  test("a statement's quick look never misses a name the name rule calls secret", () => {
    const letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_-.0123456789";
    const pieces = ["pass", "Word", "pin", "secret", "Token", "api", "Key", "auth", "session", "sig", "x", "user", "id", "_"];
    let seed = 7;
    const rnd = (n: number) => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
      return seed % n;
    };
    let secret = 0;
    for (let i = 0; i < 5000; i++) {
      const name =
        rnd(2) === 0
          ? Array.from({ length: 1 + rnd(4) }, () => pieces[rnd(pieces.length)]).join("")
          : Array.from({ length: 1 + rnd(12) }, () => letters[rnd(letters.length)]).join("");
      if (!isSensitiveJsonKey(name)) continue;
      secret++;
      expect([name, mayNameSecret(`UPDATE t SET "${name}" = $1 WHERE id = 2`)]).toEqual([name, true]);
    }
    expect(secret).toBeGreaterThan(500);
    expect(mayNameSecret("SELECT abalance FROM pgbench_accounts WHERE aid = 12345")).toBe(false);
  });
});

describe("JSON bodies: a tolerant scanner", () => {
  test("escaped key names are decoded before they are judged", () => {
    expect(redactJsonText('{"pass\\u0077ord": "hunter2", "\\u0070in": "1234"}', "redact")).toBe(
      '{"pass\\u0077ord": "[redacted]", "\\u0070in": "[redacted]"}',
    );
  });

  test("number values of secret keys are redacted too; other values and formatting kept", () => {
    expect(redactJsonText('{"pin": 4821, "n": 4821, "pass":"p"}', "redact")).toBe('{"pin": "[redacted]", "n": 4821, "pass":"[redacted]"}');
  });

  test("text inside strings is never taken for a key; nested objects and arrays are scanned", () => {
    const text = '{"note": "say \\"password\\": \\"x\\"", "list": [{"secret": "s"}, "pin", ":"]}';
    expect(redactJsonText(text, "redact")).toBe('{"note": "say \\"password\\": \\"x\\"", "list": [{"secret": "[redacted]"}, "pin", ":"]}');
  });

  test("a sample cut inside a secret value is redacted to its end; broken JSON never throws", () => {
    expect(redactJsonText('{"a": 1, "password": "hunter2-and-mo', "redact")).toBe('{"a": 1, "password": "[redacted]"');
    for (const broken of ['{"password"', '{"password":', '"\\', '{"pass\\uZZZZ": "x"}', "]]]:::", '{"token": }']) {
      expect(() => redactJsonText(broken, "redact")).not.toThrow();
    }
  });
});

describe("multipart/form-data: parts by their Content-Disposition name", () => {
  const body = [
    "--b0undary",
    'Content-Disposition: form-data; name="password"',
    "",
    "hunter2",
    "--b0undary",
    'Content-Disposition: form-data; name="avatar"; filename="me.png"',
    "Content-Type: image/png",
    "",
    "PNGDATA",
    "--b0undary",
    'Content-Disposition: form-data; name="private_key"; filename="id_ed25519"',
    "",
    "-----BEGIN OPENSSH PRIVATE KEY-----",
    "--b0undary--",
    "",
  ].join("\r\n");

  test("secret parts lose their content, boundaries, headers and other parts stay byte for byte", () => {
    expect(multipartBoundary('multipart/form-data; boundary="b0undary"')).toBe("b0undary");
    expect(multipartBoundary("multipart/form-data; charset=utf-8; boundary=b0undary")).toBe("b0undary");
    const out = redactMultipart(body, "b0undary", "redact");
    expect(out).toBe(body.replace("hunter2", "[redacted]").replace("-----BEGIN OPENSSH PRIVATE KEY-----", "[redacted]"));
  });

  test("a part cut short by the sample limit is redacted to the end", () => {
    const cut = body.slice(0, body.indexOf("hunter2") + 3);
    expect(redactMultipart(cut, "b0undary", "redact").endsWith("\r\n\r\n[redacted]")).toBe(true);
  });
});

describe("the program's command line", () => {
  test("--flag=value, --flag value, KEY=value and a URL's password", () => {
    const args = [
      "node",
      "server.js",
      "--db-password=hunter2",
      "--api-token",
      "tok",
      "-p=short",
      "AWS_SECRET_ACCESS_KEY=aws",
      "--database-url=postgres://app:pw@db/app",
      "--port",
      "8000",
      "--verbose",
      "positional",
    ];
    expect(redactCommandLine(args, "redact")).toEqual([
      "node",
      "server.js",
      "--db-password=[redacted]",
      "--api-token",
      "[redacted]",
      "-p=short",
      "AWS_SECRET_ACCESS_KEY=[redacted]",
      "--database-url=postgres://app:[redacted]@db/app",
      "--port",
      "8000",
      "--verbose",
      "positional",
    ]);
    expect(redactCommandLine(args, "keep")).toEqual(args);
    expect(redactCommandLine(["--password=a"], "hash")[0]).toMatch(/^--password=sha256:[0-9a-f]{16}$/);
  });
});

describe("headers whose value is a URL", () => {
  test("an OAuth redirect's code is redacted in Location; other headers are untouched (same array)", () => {
    const headers: Array<[string, string]> = [["Location", "https://app.example/cb?code=abc&state=s"]];
    expect(redactHeaders(headers, "redact")).toEqual([["Location", "https://app.example/cb?code=%5Bredacted%5D&state=s"]]);
    const plain: Array<[string, string]> = [
      ["Content-Length", "5"],
      ["Keep-Alive", "timeout=5"],
    ];
    expect(redactHeaders(plain, "redact")).toBe(plain);
    expect(redactHeaders([["Authentication", "Bearer abc"]], "redact")).toEqual([["Authentication", "Bearer [redacted]"]]);
  });
});
