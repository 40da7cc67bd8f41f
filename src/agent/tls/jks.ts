import { createHash } from "node:crypto";

/**
 * Java's own key store formats, JKS and JCEKS (`keytool`'s default before Java 9, and what Debian's ca-certificates-java
 * still writes for the JDK's `cacerts`). A store is a header, a list of entries and a SHA-1 digest keyed by the store
 * password; only trusted-certificate and private-key entries are understood (JCEKS secret keys are serialized Java
 * objects: such a store is refused, not guessed at).
 */
const JKS_MAGIC = 0xfeedfeed;
const JCEKS_MAGIC = 0xcececece;
const TAG_PRIVATE_KEY = 1;
const TAG_TRUSTED_CERT = 2;
const WHITENER = Buffer.from("Mighty Aphrodite", "utf8");
const DIGEST_BYTES = 20;
/** Entries and certificates per chain beyond which a file is not taken for a trust store. */
const MAX_ENTRIES = 100_000;
const MAX_CHAIN = 100;

export class KeyStoreError extends Error {
  override name = "KeyStoreError";
}

export type JksStore = {
  format: "jks" | "jceks";
  /** DER certificates the JVM trusts from this store: trusted entries, and the first certificate of each key entry. */
  trusted: Uint8Array[];
  /** Aliases in use (lower case, as the JVM compares them). */
  aliases: Set<string>;
  /** Where the entries end and the digest begins. */
  entriesEnd: number;
  count: number;
};

export function isJks(bytes: Uint8Array): boolean {
  if (bytes.length < 4) return false;
  const magic = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength).getUint32(0);
  return magic === JKS_MAGIC || magic === JCEKS_MAGIC;
}

/** The store password as the JVM feeds it to the digest: each UTF-16 code unit, big-endian. */
function passwordBytes(password: string): Buffer {
  const out = Buffer.alloc(password.length * 2);
  for (let i = 0; i < password.length; i++) out.writeUInt16BE(password.charCodeAt(i), i * 2);
  return out;
}

function digest(password: string, data: Uint8Array): Buffer {
  return createHash("sha1").update(passwordBytes(password)).update(WHITENER).update(data).digest();
}

class Reader {
  offset = 0;
  private readonly view: DataView;
  constructor(private readonly bytes: Uint8Array) {
    this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }
  need(n: number): void {
    if (n < 0 || this.offset + n > this.bytes.length) throw new KeyStoreError("the key store is truncated");
  }
  u16(): number {
    this.need(2);
    const v = this.view.getUint16(this.offset);
    this.offset += 2;
    return v;
  }
  u32(): number {
    this.need(4);
    const v = this.view.getUint32(this.offset);
    this.offset += 4;
    return v;
  }
  skip(n: number): void {
    this.need(n);
    this.offset += n;
  }
  take(n: number): Uint8Array {
    this.need(n);
    const out = this.bytes.subarray(this.offset, this.offset + n);
    this.offset += n;
    return out;
  }
  /** Java's writeUTF: a 2-byte length, then modified UTF-8 (plain UTF-8 for every alias keytool writes). */
  utf(): string {
    return Buffer.from(this.take(this.u16())).toString("utf8");
  }
}

/**
 * Reads a JKS or JCEKS store. With a password the digest is checked (a wrong password fails as it does in the JVM);
 * without one it is not, as the JVM loads a store given no password.
 */
export function readJks(bytes: Uint8Array, password: string | null): JksStore {
  const r = new Reader(bytes);
  const magic = r.u32();
  if (magic !== JKS_MAGIC && magic !== JCEKS_MAGIC) throw new KeyStoreError("not a JKS or JCEKS key store");
  const format = magic === JKS_MAGIC ? "jks" : "jceks";
  const version = r.u32();
  if (version !== 1 && version !== 2) throw new KeyStoreError(`unknown ${format.toUpperCase()} version ${version}`);
  const count = r.u32();
  if (count > MAX_ENTRIES) throw new KeyStoreError(`${count} entries is more than a trust store holds`);
  const certificate = (): Uint8Array => {
    if (version === 2) {
      const type = r.utf();
      if (type !== "X.509") throw new KeyStoreError(`a certificate of type ${type} (only X.509 is read)`);
    }
    return r.take(r.u32());
  };
  const trusted: Uint8Array[] = [];
  const aliases = new Set<string>();
  for (let i = 0; i < count; i++) {
    const tag = r.u32();
    aliases.add(r.utf().toLowerCase());
    r.skip(8); // the entry's creation time
    if (tag === TAG_TRUSTED_CERT) {
      trusted.push(certificate());
    } else if (tag === TAG_PRIVATE_KEY) {
      r.skip(r.u32()); // the protected key
      const chain = r.u32();
      if (chain > MAX_CHAIN) throw new KeyStoreError(`a certificate chain of ${chain}`);
      for (let c = 0; c < chain; c++) {
        const cert = certificate();
        if (c === 0) trusted.push(cert);
      }
    } else {
      throw new KeyStoreError(`an entry of kind ${tag} (a JCEKS secret key?) that is not read here`);
    }
  }
  const entriesEnd = r.offset;
  r.need(DIGEST_BYTES);
  if (password !== null) {
    const expected = digest(password, bytes.subarray(0, entriesEnd));
    if (!expected.equals(bytes.subarray(entriesEnd, entriesEnd + DIGEST_BYTES))) {
      throw new KeyStoreError("the password is wrong or the store was altered (its integrity check failed)");
    }
  }
  return { format, trusted, aliases, entriesEnd, count };
}

/**
 * The same store with one more trusted certificate per `extra` DER, every other entry byte for byte, its digest made
 * again with `password` (without one the JVM checks none, so any will do).
 */
export function appendJksCertificates(
  bytes: Uint8Array,
  store: JksStore,
  extra: Uint8Array[],
  password: string | null,
  now = Date.now(),
): Uint8Array {
  const parts: Buffer[] = [];
  const header = Buffer.from(bytes.subarray(0, 12));
  header.writeUInt32BE(store.count + extra.length, 8);
  parts.push(header, Buffer.from(bytes.subarray(12, store.entriesEnd)));
  const version = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength).getUint32(4);
  let suffix = 0;
  for (const der of extra) {
    let alias = "tapscope-run-ca";
    while (store.aliases.has(suffix === 0 ? alias : `${alias}-${suffix}`)) suffix++;
    if (suffix > 0) alias = `${alias}-${suffix}`;
    suffix++;
    const aliasBytes = Buffer.from(alias, "utf8");
    const entry = Buffer.alloc(4 + 2 + aliasBytes.length + 8);
    entry.writeUInt32BE(TAG_TRUSTED_CERT, 0);
    entry.writeUInt16BE(aliasBytes.length, 4);
    aliasBytes.copy(entry, 6);
    entry.writeBigUInt64BE(BigInt(now), 6 + aliasBytes.length);
    parts.push(entry);
    if (version === 2) {
      const type = Buffer.alloc(2 + 5);
      type.writeUInt16BE(5, 0);
      type.write("X.509", 2, "utf8");
      parts.push(type);
    }
    const length = Buffer.alloc(4);
    length.writeUInt32BE(der.length, 0);
    parts.push(length, Buffer.from(der));
  }
  const body = Buffer.concat(parts);
  return new Uint8Array(Buffer.concat([body, digest(password ?? "", body)]));
}
