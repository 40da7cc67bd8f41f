import { isIP } from "node:net";
import * as asn1js from "asn1js";
import * as pkijs from "pkijs";

/** PEM certificate chain (leaf first) and PKCS#8 private key: the shape of Bun's `tls: { cert, key }`. */
export type TlsCredentials = { cert: string; key: string };

export type CertificateAuthority = {
  /** The run's CA certificate, PEM: what the traced program is told to trust. */
  caPem(): string;
  /**
   * A leaf for one server name (DNS name or IP address), minted on first use and cached for the run. `alsoNames` are
   * more names for its SAN (a client that sent no server name checks one the relay cannot know: the real server's
   * certificate's names, verified, are what it would accept); names that are neither are left out.
   */
  leafFor(serverName: string, alsoNames?: readonly string[]): Promise<TlsCredentials>;
  /** When the CA stops being valid. */
  readonly notAfter: Date;
};

export type AuthorityOptions = {
  /** When the run is expected to end; the CA stays valid a day past it. Defaults to 30 days from now. */
  runEndsBy?: Date;
  /** Most leaves kept; the least recently used is dropped beyond it. */
  cacheSize?: number;
  /** The clock, for tests. */
  now?: () => Date;
};

const EC_KEY = { name: "ECDSA", namedCurve: "P-256" } as const;
const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;
const DEFAULT_RUN_MS = 30 * DAY_MS;
// Client clocks run a little behind; a certificate valid only from "now" would fail for them.
const BACKDATE_MS = HOUR_MS;
const LEAF_LIFETIME_MS = 2 * DAY_MS;
const RENEW_BEFORE_MS = HOUR_MS;
const DEFAULT_CACHE_SIZE = 10_000;
const EMPTY_NAME = Uint8Array.of(0x30, 0x00).buffer;

const OID = {
  commonName: "2.5.4.3",
  basicConstraints: "2.5.29.19",
  keyUsage: "2.5.29.15",
  extKeyUsage: "2.5.29.37",
  subjectAltName: "2.5.29.17",
  subjectKeyId: "2.5.29.14",
  authorityKeyId: "2.5.29.35",
  serverAuth: "1.3.6.1.5.5.7.3.1",
} as const;

// KeyUsage bits, first octet, most significant bit first (RFC 5280 4.2.1.3).
const KU_DIGITAL_SIGNATURE = 0x80;
const KU_KEY_CERT_SIGN = 0x04;
const KU_CRL_SIGN = 0x02;

type CachedLeaf = { credentials: Promise<TlsCredentials>; renewAt: number };

/** A certificate authority made fresh in memory for one run: its key never touches disk and dies with the process. */
export async function createAuthority(options: AuthorityOptions = {}): Promise<CertificateAuthority> {
  const clock = options.now ?? (() => new Date());
  const cacheSize = options.cacheSize ?? DEFAULT_CACHE_SIZE;
  if (!Number.isInteger(cacheSize) || cacheSize < 1) throw new Error(`cacheSize must be a positive integer, got ${cacheSize}`);
  const start = clock().getTime();
  const runEnd = options.runEndsBy?.getTime() ?? start + DEFAULT_RUN_MS;
  if (runEnd <= start) throw new Error(`runEndsBy must be in the future, got ${new Date(runEnd).toISOString()}`);

  const caNotBefore = new Date(start - BACKDATE_MS);
  const caNotAfter = new Date(runEnd + DAY_MS);
  const caKeys = await generateKeyPair(false);
  const caName = name(`Tapscope run CA ${hex(randomBytes(6))}`);

  const ca = new pkijs.Certificate();
  ca.version = 2;
  ca.serialNumber = serialNumber();
  ca.issuer = caName;
  ca.subject = caName;
  ca.notBefore.value = caNotBefore;
  ca.notAfter.value = caNotAfter;
  await ca.subjectPublicKeyInfo.importKey(caKeys.publicKey);
  const caKeyId = await keyIdentifier(ca.subjectPublicKeyInfo);
  ca.extensions = [
    extension(OID.basicConstraints, true, new pkijs.BasicConstraints({ cA: true, pathLenConstraint: 0 }).toSchema()),
    extension(OID.keyUsage, true, keyUsage(KU_KEY_CERT_SIGN | KU_CRL_SIGN)),
    extension(OID.subjectKeyId, false, new asn1js.OctetString({ valueHex: caKeyId })),
  ];
  await ca.sign(caKeys.privateKey, "SHA-256");
  const caCertPem = pem("CERTIFICATE", ca.toSchema(true).toBER(false));

  const leafExtensions = [
    extension(OID.basicConstraints, true, new pkijs.BasicConstraints({ cA: false }).toSchema()),
    extension(OID.keyUsage, true, keyUsage(KU_DIGITAL_SIGNATURE)),
    extension(OID.extKeyUsage, false, new pkijs.ExtKeyUsage({ keyPurposes: [OID.serverAuth] }).toSchema()),
    extension(
      OID.authorityKeyId,
      false,
      new pkijs.AuthorityKeyIdentifier({ keyIdentifier: new asn1js.OctetString({ valueHex: caKeyId }) }).toSchema(),
    ),
  ];

  async function mint(target: ServerName, also: ServerName[], now: number): Promise<TlsCredentials> {
    const keys = await generateKeyPair(true);
    const leaf = new pkijs.Certificate();
    leaf.version = 2;
    leaf.serialNumber = serialNumber();
    leaf.issuer = caName;
    // Clients match on the SAN; a common name longer than X.520's 64 characters is left out.
    const hasSubject = target.text.length <= 64;
    // pkijs writes an empty name as one empty RDN, which BoringSSL rejects; DER wants an empty SEQUENCE.
    leaf.subject = hasSubject ? name(target.text) : new pkijs.RelativeDistinguishedNames({ valueBeforeDecode: EMPTY_NAME });
    leaf.notBefore.value = new Date(Math.max(now - BACKDATE_MS, caNotBefore.getTime()));
    leaf.notAfter.value = new Date(Math.min(now + LEAF_LIFETIME_MS, caNotAfter.getTime()));
    const san = new pkijs.GeneralNames({
      names: [target, ...also].map((n) =>
        n.ip
          ? new pkijs.GeneralName({ type: 7, value: new asn1js.OctetString({ valueHex: n.ip }) })
          : new pkijs.GeneralName({ type: 2, value: n.text }),
      ),
    });
    // RFC 5280: with an empty subject the SAN must be critical.
    leaf.extensions = [...leafExtensions, extension(OID.subjectAltName, !hasSubject, san.toSchema())];
    await leaf.subjectPublicKeyInfo.importKey(keys.publicKey);
    await leaf.sign(caKeys.privateKey, "SHA-256");
    const key = await crypto.subtle.exportKey("pkcs8", keys.privateKey);
    return { cert: pem("CERTIFICATE", leaf.toSchema(true).toBER(false)) + caCertPem, key: pem("PRIVATE KEY", key) };
  }

  // Map iteration order is insertion order: re-inserting on use keeps the least recently used first.
  const cache = new Map<string, CachedLeaf>();

  return {
    notAfter: caNotAfter,
    caPem: () => caCertPem,
    async leafFor(serverName: string, alsoNames: readonly string[] = []): Promise<TlsCredentials> {
      const target = parseServerName(serverName);
      const also: ServerName[] = [];
      const seen = new Set([target.text]);
      for (const name of alsoNames.slice(0, MAX_EXTRA_NAMES)) {
        const parsed = tryServerName(name);
        if (parsed && !seen.has(parsed.text)) {
          seen.add(parsed.text);
          also.push(parsed);
        }
      }
      const key = [target.text, ...also.map((n) => n.text)].join(" ");
      const now = clock().getTime();
      const hit = cache.get(key);
      if (hit && now < hit.renewAt) {
        cache.delete(key);
        cache.set(key, hit);
        return hit.credentials;
      }
      if (now >= caNotAfter.getTime()) throw new Error(`the run's CA expired at ${caNotAfter.toISOString()}`);
      const credentials = mint(target, also, now);
      const renewAt = Math.min(now + LEAF_LIFETIME_MS, caNotAfter.getTime()) - RENEW_BEFORE_MS;
      const entry: CachedLeaf = { credentials, renewAt };
      cache.delete(key);
      cache.set(key, entry);
      credentials.catch(() => {
        if (cache.get(key) === entry) cache.delete(key);
      });
      while (cache.size > cacheSize) {
        const oldest = cache.keys().next().value;
        if (oldest === undefined) break;
        cache.delete(oldest);
      }
      return credentials;
    },
  };
}

type ServerName = { text: string; ip: Uint8Array | null };

const DNS_LABEL = /^[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?$/;
/** Names beyond the first a leaf carries at most. */
const MAX_EXTRA_NAMES = 100;

/** A SAN name of a real certificate: also a wildcard ("*.example.com"); null when it is not a name we mint. */
function tryServerName(raw: string): ServerName | null {
  if (raw.startsWith("*.")) {
    const rest = tryServerName(raw.slice(2));
    return rest && !rest.ip ? { text: `*.${rest.text}`, ip: null } : null;
  }
  try {
    return parseServerName(raw);
  } catch {
    return null;
  }
}

/** A server name as it arrives in SNI or from a connect address: a DNS name, or an IPv4/IPv6 literal. */
function parseServerName(raw: string): ServerName {
  const bracketless = raw.startsWith("[") && raw.endsWith("]") ? raw.slice(1, -1) : raw;
  const address = bracketless.split("%")[0] ?? bracketless;
  const family = isIP(address);
  if (family === 4) return { text: address, ip: ipv4Bytes(address) };
  if (family === 6) {
    const ip = ipv6Bytes(address);
    return { text: ipv6Text(ip), ip };
  }
  const text = raw.toLowerCase().replace(/\.$/, "");
  if (text.length === 0 || text.length > 253 || !text.split(".").every((label) => DNS_LABEL.test(label)))
    throw new Error(`not a DNS name or IP address: ${JSON.stringify(raw.slice(0, 300))}`);
  return { text, ip: null };
}

function ipv4Bytes(text: string): Uint8Array {
  return Uint8Array.from(text.split(".").map(Number));
}

function ipv6Bytes(text: string): Uint8Array {
  const bytes = new Uint8Array(16);
  let groups: string[];
  const [head = "", tail] = text.split("::");
  const headGroups = head === "" ? [] : head.split(":");
  const tailGroups = tail === undefined || tail === "" ? [] : tail.split(":");
  const last = tailGroups.length > 0 ? tailGroups : headGroups;
  const lastGroup = last[last.length - 1];
  if (lastGroup?.includes(".")) {
    const [a = 0, b = 0, c = 0, d = 0] = ipv4Bytes(lastGroup);
    last.splice(last.length - 1, 1, ((a << 8) | b).toString(16), ((c << 8) | d).toString(16));
  }
  if (tail === undefined) groups = headGroups;
  else groups = [...headGroups, ...Array<string>(8 - headGroups.length - tailGroups.length).fill("0"), ...tailGroups];
  groups.forEach((group, i) => {
    const value = Number.parseInt(group, 16);
    bytes[i * 2] = value >> 8;
    bytes[i * 2 + 1] = value & 0xff;
  });
  return bytes;
}

/** One spelling per IPv6 address, so "::1" and "0:0::1" share a cache entry. */
function ipv6Text(bytes: Uint8Array): string {
  const groups: string[] = [];
  for (let i = 0; i < 16; i += 2) groups.push((((bytes[i] ?? 0) << 8) | (bytes[i + 1] ?? 0)).toString(16));
  return groups.join(":");
}

async function generateKeyPair(extractable: boolean): Promise<CryptoKeyPair> {
  return crypto.subtle.generateKey(EC_KEY, extractable, ["sign", "verify"]);
}

function name(commonName: string): pkijs.RelativeDistinguishedNames {
  const rdn = new pkijs.RelativeDistinguishedNames();
  rdn.typesAndValues.push(new pkijs.AttributeTypeAndValue({ type: OID.commonName, value: new asn1js.Utf8String({ value: commonName }) }));
  return rdn;
}

function extension(extnID: string, critical: boolean, value: asn1js.BaseBlock): pkijs.Extension {
  return new pkijs.Extension({ extnID, critical, extnValue: value.toBER(false) });
}

/** KeyUsage as a DER BIT STRING: trailing zero bits are declared unused, as DER requires. */
function keyUsage(bits: number): asn1js.BitString {
  let unused = 0;
  while (unused < 7 && (bits & (1 << unused)) === 0) unused++;
  return new asn1js.BitString({ valueHex: Uint8Array.of(bits), unusedBits: unused });
}

/** 16 random bytes with the top bit clear: positive, and unique without a counter. */
function serialNumber(): asn1js.Integer {
  const bytes = randomBytes(16);
  bytes[0] = ((bytes[0] ?? 0) & 0x7f) | 0x01;
  return new asn1js.Integer({ valueHex: bytes });
}

/** RFC 5280 4.2.1.2 method 1: SHA-1 of the subjectPublicKey bits. */
async function keyIdentifier(spki: pkijs.PublicKeyInfo): Promise<ArrayBuffer> {
  return crypto.subtle.digest("SHA-1", new Uint8Array(spki.subjectPublicKey.valueBlock.valueHexView));
}

function randomBytes(n: number): Uint8Array {
  return crypto.getRandomValues(new Uint8Array(n));
}

function hex(bytes: Uint8Array): string {
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

function pem(label: string, der: ArrayBuffer): string {
  const base64 = Buffer.from(der).toString("base64");
  return `-----BEGIN ${label}-----\n${base64.replace(/.{1,64}/g, "$&\n")}-----END ${label}-----\n`;
}
