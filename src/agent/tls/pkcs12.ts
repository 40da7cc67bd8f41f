import { createDecipheriv, createHash, createHmac, pbkdf2Sync, randomBytes } from "node:crypto";
import * as asn1js from "asn1js";
import { KeyStoreError } from "./jks.ts";

/**
 * PKCS#12 key stores as a JVM reads them (RFC 7292): what `keytool` writes today (PBES2 with AES and an HMAC-SHA-256
 * MAC), what older JDKs and OpenSSL 1.x wrote (RC2-40 and 3DES under the PKCS#12 key derivation), and the password-less
 * stores of JDK 18 and later. Structure goes through asn1js; the crypto is node:crypto's, synchronous, since WebCrypto
 * has neither RC2 nor 3DES.
 *
 * A merged store keeps every one of the program's safe contents byte for byte (its keys too) and adds one unencrypted
 * safe contents with the extra trusted certificates; the MAC is made again with the program's password.
 */
const OID = {
  data: "1.2.840.113549.1.7.1",
  encryptedData: "1.2.840.113549.1.7.6",
  certBag: "1.2.840.113549.1.12.10.1.3",
  safeContentsBag: "1.2.840.113549.1.12.10.1.6",
  x509Certificate: "1.2.840.113549.1.9.22.1",
  friendlyName: "1.2.840.113549.1.9.20",
  localKeyId: "1.2.840.113549.1.9.21",
  // Java loads a certificate bag as a trusted entry only when it carries this attribute.
  oracleTrustedKeyUsage: "2.16.840.1.113894.746875.1.1",
  anyExtendedKeyUsage: "2.5.29.37.0",
  pbes2: "1.2.840.113549.1.5.13",
  pbkdf2: "1.2.840.113549.1.5.12",
  pbmac1: "1.2.840.113549.1.5.14",
} as const;

const HASHES: Record<string, { name: string; block: number; size: number }> = {
  "1.3.14.3.2.26": { name: "sha1", block: 64, size: 20 },
  "2.16.840.1.101.3.4.2.4": { name: "sha224", block: 64, size: 28 },
  "2.16.840.1.101.3.4.2.1": { name: "sha256", block: 64, size: 32 },
  "2.16.840.1.101.3.4.2.2": { name: "sha384", block: 128, size: 48 },
  "2.16.840.1.101.3.4.2.3": { name: "sha512", block: 128, size: 64 },
};
const SHA1 = "1.3.14.3.2.26";

/** PKCS#12 password-based encryption (RFC 7292 appendix C), all under SHA-1: cipher, key and IV lengths. */
const PKCS12_PBE: Record<string, { cipher: string; key: number; iv: number }> = {
  "1.2.840.113549.1.12.1.3": { cipher: "des-ede3-cbc", key: 24, iv: 8 },
  "1.2.840.113549.1.12.1.4": { cipher: "des-ede-cbc", key: 16, iv: 8 },
  "1.2.840.113549.1.12.1.5": { cipher: "rc2-cbc", key: 16, iv: 8 },
  "1.2.840.113549.1.12.1.6": { cipher: "rc2-40-cbc", key: 5, iv: 8 },
};

const PBES2_CIPHERS: Record<string, { cipher: string; key: number }> = {
  "2.16.840.1.101.3.4.1.2": { cipher: "aes-128-cbc", key: 16 },
  "2.16.840.1.101.3.4.1.22": { cipher: "aes-192-cbc", key: 24 },
  "2.16.840.1.101.3.4.1.42": { cipher: "aes-256-cbc", key: 32 },
  "1.2.840.113549.3.7": { cipher: "des-ede3-cbc", key: 24 },
};

const PBKDF2_PRFS: Record<string, string> = {
  "1.2.840.113549.2.7": "sha1",
  "1.2.840.113549.2.8": "sha224",
  "1.2.840.113549.2.9": "sha256",
  "1.2.840.113549.2.10": "sha384",
  "1.2.840.113549.2.11": "sha512",
};

/**
 * Iteration counts beyond this are refused: the store is read on the supervisor's thread, which must not stall for
 * long (keytool writes 10,000, older JDKs 50,000 to 100,000).
 */
const MAX_ITERATIONS = 1_000_000;
const MAX_BAGS = 100_000;
const MAX_NESTING = 4;

export type Pkcs12Store = {
  format: "pkcs12";
  trusted: Uint8Array[];
  /** Safe contents the JVM skips without a password (encrypted ones): said to the user, as the JVM would skip them. */
  skippedEncrypted: number;
  /** The authenticated safe's elements, as they were encoded. */
  contents: Uint8Array[];
  mac: { hash: string; iterations: number } | null;
};

export function isPkcs12(bytes: Uint8Array): boolean {
  // A DER SEQUENCE whose first element is INTEGER 3 (the PFX version).
  if (bytes[0] !== 0x30) return false;
  const lengthBytes = (bytes[1] ?? 0) & 0x80 ? ((bytes[1] ?? 0) & 0x7f) + 1 : 1;
  const at = 1 + lengthBytes;
  return bytes[at] === 0x02 && bytes[at + 1] === 0x01 && bytes[at + 2] === 0x03;
}

type Node = asn1js.AsnType;

function parse(bytes: Uint8Array, what: string): Node {
  const view = bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength ? bytes : bytes.slice();
  const parsed = asn1js.fromBER(view);
  if (parsed.offset === -1 || parsed.result.error) throw new KeyStoreError(`${what} is not valid DER/BER`);
  return parsed.result;
}

function children(node: Node | undefined, what: string): Node[] {
  const value = (node as asn1js.Constructed | undefined)?.valueBlock?.value;
  if (!Array.isArray(value)) throw new KeyStoreError(`${what}: a SEQUENCE was expected`);
  return value as Node[];
}

function oid(node: Node | undefined, what: string): string {
  if (!(node instanceof asn1js.ObjectIdentifier)) throw new KeyStoreError(`${what}: an object identifier was expected`);
  return node.getValue();
}

function integer(node: Node | undefined, what: string): number {
  if (!(node instanceof asn1js.Integer)) throw new KeyStoreError(`${what}: an INTEGER was expected`);
  // asn1js's valueDec reads 0 for four bytes and more.
  const value = node.toBigInt();
  if (value > BigInt(Number.MAX_SAFE_INTEGER) || value < 0n) throw new KeyStoreError(`${what}: ${value} is out of range`);
  return Number(value);
}

/** An OCTET STRING's bytes, primitive or (BER) constructed. */
function octets(node: Node | undefined, what: string): Uint8Array {
  if (!(node instanceof asn1js.OctetString)) throw new KeyStoreError(`${what}: an OCTET STRING was expected`);
  if (!node.valueBlock.isConstructed) return node.valueBlock.valueHexView;
  return Buffer.concat((node.valueBlock.value as Node[]).map((part) => octets(part, what)));
}

/** The content of an [0] EXPLICIT tag. */
function explicit(node: Node | undefined, what: string): Node {
  if (!node || node.idBlock.tagClass !== 3 || node.idBlock.tagNumber !== 0) throw new KeyStoreError(`${what}: [0] was expected`);
  const inner = children(node, what)[0];
  if (!inner) throw new KeyStoreError(`${what}: [0] is empty`);
  return inner;
}

function raw(node: Node): Uint8Array {
  return new Uint8Array(node.valueBeforeDecodeView);
}

/** RFC 7292 appendix B.2: the PKCS#12 key derivation (`id` 1 key, 2 IV, 3 MAC key). */
function pkcs12Kdf(hash: string, password: Uint8Array, salt: Uint8Array, id: number, iterations: number, length: number): Buffer {
  const { block: v, size: u } = Object.values(HASHES).find((h) => h.name === hash)!;
  const fill = (src: Uint8Array) => {
    if (src.length === 0) return Buffer.alloc(0);
    const out = Buffer.alloc(v * Math.ceil(src.length / v));
    for (let i = 0; i < out.length; i++) out[i] = src[i % src.length]!;
    return out;
  };
  const d = Buffer.alloc(v, id);
  const i = Buffer.concat([fill(salt), fill(password)]);
  const out = Buffer.alloc(length);
  for (let done = 0; done < length; ) {
    let a = createHash(hash).update(d).update(i).digest();
    for (let r = 1; r < iterations; r++) a = createHash(hash).update(a).digest();
    a.copy(out, done, 0, Math.min(u, length - done));
    done += u;
    if (done >= length) break;
    const b = fill(a.subarray(0, Math.min(u, v)));
    for (let j = 0; j < i.length; j += v) {
      let carry = 1;
      for (let k = v - 1; k >= 0; k--) {
        const sum = i[j + k]! + b[k]! + carry;
        i[j + k] = sum & 0xff;
        carry = sum >> 8;
      }
    }
  }
  return out;
}

/** The password as the PKCS#12 key derivation takes it: UTF-16 big-endian with a terminating zero. */
function bmpPassword(password: string): Uint8Array {
  const out = Buffer.alloc(password.length * 2 + 2);
  for (let i = 0; i < password.length; i++) out.writeUInt16BE(password.charCodeAt(i), i * 2);
  return out;
}

function checkIterations(n: number, what: string): number {
  if (!Number.isInteger(n) || n < 1 || n > MAX_ITERATIONS) throw new KeyStoreError(`${what}: ${n} iterations is refused`);
  return n;
}

function decrypt(algorithm: Node, data: Uint8Array, password: string): Uint8Array {
  const [algOid, params] = children(algorithm, "encryption algorithm");
  const id = oid(algOid, "encryption algorithm");
  try {
    const pbe = PKCS12_PBE[id];
    if (pbe) {
      const [salt, iterations] = children(params, "PBE parameters");
      const s = octets(salt, "PBE salt");
      const n = checkIterations(integer(iterations, "PBE iterations"), "PBE");
      const pw = bmpPassword(password);
      const key = pkcs12Kdf("sha1", pw, s, 1, n, pbe.key);
      const iv = pkcs12Kdf("sha1", pw, s, 2, n, pbe.iv);
      const decipher = createDecipheriv(pbe.cipher, key, iv);
      return Buffer.concat([decipher.update(data), decipher.final()]);
    }
    if (id === OID.pbes2) {
      const [kdf, scheme] = children(params, "PBES2 parameters");
      const [kdfOid, kdfParams] = children(kdf, "PBES2 key derivation");
      if (oid(kdfOid, "PBES2 key derivation") !== OID.pbkdf2) throw new KeyStoreError("a PBES2 key derivation other than PBKDF2");
      const fields = children(kdfParams, "PBKDF2 parameters");
      const salt = octets(fields[0], "PBKDF2 salt");
      const n = checkIterations(integer(fields[1], "PBKDF2 iterations"), "PBKDF2");
      let prf = "sha1";
      for (const field of fields.slice(2)) {
        if (field instanceof asn1js.Sequence) {
          const prfId = oid(children(field, "PBKDF2 PRF")[0], "PBKDF2 PRF");
          const name = PBKDF2_PRFS[prfId];
          if (!name) throw new KeyStoreError(`the PBKDF2 PRF ${prfId}`);
          prf = name;
        }
      }
      const [cipherOid, iv] = children(scheme, "PBES2 cipher");
      const cipherId = oid(cipherOid, "PBES2 cipher");
      const cipher = PBES2_CIPHERS[cipherId];
      if (!cipher) throw new KeyStoreError(`the PBES2 cipher ${cipherId}`);
      const key = pbkdf2Sync(Buffer.from(password, "utf8"), salt, n, cipher.key, prf);
      const decipher = createDecipheriv(cipher.cipher, key, octets(iv, "PBES2 IV"));
      return Buffer.concat([decipher.update(data), decipher.final()]);
    }
  } catch (error) {
    if (error instanceof KeyStoreError) throw error;
    // A bad padding is what a wrong password looks like.
    throw new KeyStoreError("the password is wrong (its encrypted certificates could not be decrypted)");
  }
  throw new KeyStoreError(`encryption ${id}, which is not read here`);
}

type Bag = { id: string; value: Node; attributes: Map<string, Node[]> };

function safeBags(bytes: Uint8Array, depth: number): Bag[] {
  if (depth > MAX_NESTING) throw new KeyStoreError("safe contents nested too deep");
  const bags: Bag[] = [];
  for (const bag of children(parse(bytes, "the safe contents"), "safe contents")) {
    const [bagId, bagValue, bagAttributes] = children(bag, "safe bag");
    const attributes = new Map<string, Node[]>();
    if (bagAttributes) {
      for (const attribute of children(bagAttributes, "bag attributes")) {
        const [type, values] = children(attribute, "bag attribute");
        attributes.set(oid(type, "bag attribute"), children(values, "bag attribute values"));
      }
    }
    const id = oid(bagId, "safe bag");
    const value = explicit(bagValue, "safe bag value");
    if (id === OID.safeContentsBag) bags.push(...safeBags(raw(value), depth + 1));
    else bags.push({ id, value, attributes });
    if (bags.length > MAX_BAGS) throw new KeyStoreError(`more than ${MAX_BAGS} entries`);
  }
  return bags;
}

function verifyMac(macData: Node, content: Uint8Array, password: string): { hash: string; iterations: number } {
  const fields = children(macData, "MAC data");
  const [digestInfo, salt, iterations] = fields;
  const [algorithm, digest] = children(digestInfo, "MAC digest");
  const hashId = oid(children(algorithm, "MAC algorithm")[0], "MAC algorithm");
  if (hashId === OID.pbmac1) throw new KeyStoreError("a PBMAC1 integrity check, which is not read here");
  const hash = HASHES[hashId];
  if (!hash) throw new KeyStoreError(`a MAC with hash ${hashId}, which is not read here`);
  const n = iterations instanceof asn1js.Integer ? checkIterations(integer(iterations, "MAC iterations"), "MAC") : 1;
  const key = pkcs12Kdf(hash.name, bmpPassword(password), octets(salt, "MAC salt"), 3, n, hash.size);
  const mac = createHmac(hash.name, key).update(content).digest();
  if (!mac.equals(octets(digest, "MAC digest"))) {
    throw new KeyStoreError("the password is wrong or the store was altered (its integrity check failed)");
  }
  return { hash: hash.name, iterations: n };
}

/**
 * Reads a PKCS#12 store as the JVM does with this password: with one, the MAC is checked and encrypted safe contents
 * are decrypted; without one, neither (the JVM skips both). Trusted: the certificate bags Java marks trusted and the
 * certificates that belong to a key entry.
 */
export function readPkcs12(bytes: Uint8Array, password: string | null): Pkcs12Store {
  const pfx = children(parse(bytes, "the key store"), "PFX");
  if (integer(pfx[0], "PFX version") !== 3) throw new KeyStoreError("not a version 3 PKCS#12 store");
  const [authType, authContent] = children(pfx[1], "authenticated safe");
  if (oid(authType, "authenticated safe") !== OID.data)
    throw new KeyStoreError("a public-key protected (signed) store, which is not read here");
  const content = octets(explicit(authContent, "authenticated safe"), "authenticated safe");
  const mac = password !== null && pfx[2] ? verifyMac(pfx[2], content, password) : null;
  const elements = children(parse(content, "the authenticated safe"), "authenticated safe");
  const trusted: Uint8Array[] = [];
  let skippedEncrypted = 0;
  for (const info of elements) {
    const [type, body] = children(info, "content info");
    const kind = oid(type, "content info");
    let safe: Uint8Array;
    if (kind === OID.data) {
      safe = octets(explicit(body, "safe contents"), "safe contents");
    } else if (kind === OID.encryptedData) {
      if (password === null) {
        skippedEncrypted++;
        continue;
      }
      const [, encryptedContentInfo] = children(explicit(body, "encrypted data"), "encrypted data");
      const [, algorithm, encrypted] = children(encryptedContentInfo, "encrypted content info");
      if (!encrypted || encrypted.idBlock.tagClass !== 3) throw new KeyStoreError("encrypted data without content");
      // [0] IMPLICIT OCTET STRING: primitive, or constructed of OCTET STRINGs in BER.
      const data = encrypted.idBlock.isConstructed
        ? Buffer.concat(children(encrypted, "encrypted content").map((part) => octets(part, "encrypted content")))
        : (encrypted as asn1js.Primitive).valueBlock.valueHexView;
      safe = decrypt(algorithm!, data, password);
    } else {
      throw new KeyStoreError(`safe contents of type ${kind}, which is not read here`);
    }
    for (const bag of safeBags(safe, 0)) {
      if (bag.id !== OID.certBag) continue;
      const [certId, certValue] = children(bag.value, "certificate bag");
      if (oid(certId, "certificate bag") !== OID.x509Certificate) continue;
      if (bag.attributes.has(OID.oracleTrustedKeyUsage) || bag.attributes.has(OID.localKeyId)) {
        trusted.push(octets(explicit(certValue, "certificate"), "certificate"));
      }
    }
  }
  return { format: "pkcs12", trusted, skippedEncrypted, contents: elements.map(raw), mac };
}

/** DER length octets. */
function length(n: number): Uint8Array {
  if (n < 0x80) return Uint8Array.of(n);
  const bytes: number[] = [];
  for (let v = n; v > 0; v = Math.floor(v / 256)) bytes.unshift(v & 0xff);
  return Uint8Array.of(0x80 | bytes.length, ...bytes);
}

function tlv(tag: number, ...parts: Uint8Array[]): Uint8Array {
  const body = Buffer.concat(parts);
  return Buffer.concat([Uint8Array.of(tag), length(body.length), body]);
}

const der = (node: asn1js.AsnType) => new Uint8Array(node.toBER(false));

function trustedCertBag(certificate: Uint8Array, alias: string): Uint8Array {
  const attribute = (type: string, value: asn1js.AsnType) =>
    tlv(0x30, der(new asn1js.ObjectIdentifier({ value: type })), tlv(0x31, der(value)));
  return tlv(
    0x30,
    der(new asn1js.ObjectIdentifier({ value: OID.certBag })),
    tlv(0xa0, tlv(0x30, der(new asn1js.ObjectIdentifier({ value: OID.x509Certificate })), tlv(0xa0, tlv(0x04, certificate)))),
    tlv(
      0x31,
      attribute(OID.friendlyName, new asn1js.BmpString({ value: alias })),
      attribute(OID.oracleTrustedKeyUsage, new asn1js.ObjectIdentifier({ value: OID.anyExtendedKeyUsage })),
    ),
  );
}

/**
 * The program's store plus `extra` as trusted certificates: its own safe contents untouched, one more in the clear,
 * and a MAC under `password` with the hash and iterations of its own (none where it had none or the JVM is given no
 * password, which checks none).
 */
export function appendPkcs12Certificates(store: Pkcs12Store, extra: Uint8Array[], password: string | null): Uint8Array {
  const bags = extra.map((cert, i) => trustedCertBag(cert, i === 0 ? "tapscope-run-ca" : `tapscope-run-ca-${i}`));
  const added = tlv(0x30, der(new asn1js.ObjectIdentifier({ value: OID.data })), tlv(0xa0, tlv(0x04, tlv(0x30, ...bags))));
  const authSafe = tlv(0x30, ...store.contents, added);
  const parts = [
    der(new asn1js.Integer({ value: 3 })),
    tlv(0x30, der(new asn1js.ObjectIdentifier({ value: OID.data })), tlv(0xa0, tlv(0x04, authSafe))),
  ];
  if (password !== null && store.mac) {
    const hashId = Object.entries(HASHES).find(([, h]) => h.name === store.mac?.hash)?.[0] ?? SHA1;
    const hash = HASHES[hashId]!;
    const iterations = store.mac.iterations;
    const salt = randomBytes(20);
    const key = pkcs12Kdf(hash.name, bmpPassword(password), salt, 3, iterations, hash.size);
    const mac = createHmac(hash.name, key).update(authSafe).digest();
    parts.push(
      tlv(
        0x30,
        tlv(0x30, tlv(0x30, der(new asn1js.ObjectIdentifier({ value: hashId })), Uint8Array.of(0x05, 0x00)), tlv(0x04, mac)),
        tlv(0x04, salt),
        der(new asn1js.Integer({ value: iterations })),
      ),
    );
  }
  return tlv(0x30, ...parts);
}
