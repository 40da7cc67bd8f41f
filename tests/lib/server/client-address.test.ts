import { describe, expect, test } from "bun:test";
import { clientAddress, parseTrustedProxies, trustedProxies } from "~/lib/server/client-address.ts";
import { ConfigError, parseConfig } from "~/lib/server/env.ts";

const env = { DATA_DIR: "/tmp/tapscope-client-address-test", SESSION_SECRET: "client-address-test-secret-0123456789" };

describe("client address", () => {
  const none = trustedProxies([]);
  const proxies = trustedProxies(parseConfig({ ...env, TRUST_PROXY: "loopback, 10.0.0.0/8, 2001:db8:ffff::1" }).trustProxy);

  test("without TRUST_PROXY it is the socket peer, whatever X-Forwarded-For says", () => {
    expect(clientAddress("203.0.113.4", "198.51.100.1", none)).toBe("203.0.113.4");
    expect(clientAddress("127.0.0.1", "198.51.100.1", none)).toBe("127.0.0.1");
    expect(clientAddress("::ffff:203.0.113.4", null, none)).toBe("203.0.113.4");
  });

  test("from a trusted proxy: the right-most entry that is not a trusted proxy; a spoofed left-most one is never used", () => {
    expect(clientAddress("127.0.0.1", "198.51.100.1", proxies)).toBe("198.51.100.1");
    expect(clientAddress("127.0.0.1", "6.6.6.6, 198.51.100.1", proxies)).toBe("198.51.100.1");
    expect(clientAddress("10.1.2.3", "6.6.6.6, 198.51.100.1, 10.0.0.7", proxies)).toBe("198.51.100.1");
    expect(clientAddress("127.0.0.1", "not-an-address, 198.51.100.1", proxies)).toBe("198.51.100.1");
    // A chain our proxies did not write (garbage at the right): the proxy itself is the client.
    expect(clientAddress("127.0.0.1", "198.51.100.1, garbage", proxies)).toBe("127.0.0.1");
    expect(clientAddress("127.0.0.1", null, proxies)).toBe("127.0.0.1");
    // A peer that is not a proxy cannot name someone else.
    expect(clientAddress("203.0.113.4", "198.51.100.1", proxies)).toBe("203.0.113.4");
  });

  test("IPv6 clients are counted by their /64", () => {
    expect(clientAddress("2001:db8:1:2:3:4:5:6", null, none)).toBe("2001:db8:1:2::/64");
    expect(clientAddress("2001:db8:1:2::9", null, none)).toBe("2001:db8:1:2::/64");
    expect(clientAddress("2001:DB8::1", null, none)).toBe("2001:db8:0:0::/64");
    expect(clientAddress("::1", "2001:db8:9:9::1", proxies)).toBe("2001:db8:9:9::/64");
  });

  test("TRUST_PROXY: addresses, CIDR ranges and loopback; anything else is a clear configuration error", () => {
    expect(parseTrustedProxies("loopback")).toEqual({ cidrs: ["127.0.0.0/8", "::1/128"] });
    expect(parseTrustedProxies("10.0.0.1, fd00::/8")).toEqual({ cidrs: ["10.0.0.1/32", "fd00::/8"] });
    expect(parseConfig(env).trustProxy).toEqual([]);
    for (const bad of ["localhost", "10.0.0.0/33", "10.0.0.0/x", "1.2.3.4/8/8"]) {
      expect(() => parseConfig({ ...env, TRUST_PROXY: bad })).toThrow(ConfigError);
    }
    expect(() => parseConfig({ ...env, ANONYMOUS_LINKS_PER_HOUR: "-1" })).toThrow(ConfigError);
    expect(parseConfig(env).anonymousLinksPerHour).toBe(100);
  });
});
