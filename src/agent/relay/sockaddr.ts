/** Socket addresses as the kernel lays them out (sockaddr_in / sockaddr_in6) and as people write them. */
export type SockAddr = {
  /** 4 or 6: the address family of `ip` (a v4-mapped v6 address is family 6). */
  family: 4 | 6;
  ip: string;
  port: number;
  scopeId?: number;
};

const AF_INET = 2;
const AF_INET6 = 10;
export const SOCKADDR_IN_LEN = 16;
export const SOCKADDR_IN6_LEN = 28;

export function decodeSockAddr(bytes: Uint8Array): SockAddr | null {
  if (bytes.length < 2) return null;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const family = view.getUint16(0, true);
  if (family === AF_INET && bytes.length >= 16) {
    return { family: 4, ip: `${bytes[4]}.${bytes[5]}.${bytes[6]}.${bytes[7]}`, port: view.getUint16(2, false) };
  }
  if (family === AF_INET6 && bytes.length >= 28) {
    return {
      family: 6,
      ip: formatIpv6(bytes.subarray(8, 24)),
      port: view.getUint16(2, false),
      scopeId: view.getUint32(24, true),
    };
  }
  return null;
}

/** Encodes addr for a socket of the given kernel family; IPv4 on an AF_INET6 socket becomes v4-mapped. */
export function encodeSockAddr(addr: SockAddr, socketFamily: number): Uint8Array {
  if (socketFamily === AF_INET) {
    const v4 = addr.family === 4 ? addr.ip : unmapV4(addr.ip);
    const out = new Uint8Array(SOCKADDR_IN_LEN);
    const view = new DataView(out.buffer);
    view.setUint16(0, AF_INET, true);
    view.setUint16(2, addr.port, false);
    out.set(parseIpv4(v4 ?? "0.0.0.0"), 4);
    return out;
  }
  const out = new Uint8Array(SOCKADDR_IN6_LEN);
  const view = new DataView(out.buffer);
  view.setUint16(0, AF_INET6, true);
  view.setUint16(2, addr.port, false);
  out.set(addr.family === 4 ? [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, ...parseIpv4(addr.ip)] : parseIpv6(addr.ip), 8);
  view.setUint32(24, addr.scopeId ?? 0, true);
  return out;
}

export function parseIpv4(ip: string): number[] {
  const parts = ip.split(".").map(Number);
  if (parts.length !== 4 || parts.some((p) => !Number.isInteger(p) || p < 0 || p > 255)) {
    throw new Error(`not an IPv4 address: ${ip}`);
  }
  return parts;
}

export function parseIpv6(ip: string): number[] {
  const zone = ip.indexOf("%");
  const text = zone >= 0 ? ip.slice(0, zone) : ip;
  const [head = "", tail] = text.split("::");
  const groups = (s: string): number[] => {
    if (!s) return [];
    const out: number[] = [];
    for (const part of s.split(":")) {
      if (part.includes(".")) {
        const [a, b, c, d] = parseIpv4(part);
        out.push((a! << 8) | b!, (c! << 8) | d!);
      } else out.push(Number.parseInt(part, 16));
    }
    return out;
  };
  const left = groups(head);
  const right = tail === undefined ? [] : groups(tail);
  const zeros = tail === undefined ? 0 : 8 - left.length - right.length;
  const all = [...left, ...Array(Math.max(0, zeros)).fill(0), ...right];
  if (all.length !== 8 || all.some((g) => Number.isNaN(g) || g < 0 || g > 0xffff)) {
    throw new Error(`not an IPv6 address: ${ip}`);
  }
  return all.flatMap((g) => [g >> 8, g & 0xff]);
}

export function formatIpv6(bytes: Uint8Array): string {
  const groups: number[] = [];
  for (let i = 0; i < 16; i += 2) groups.push((bytes[i]! << 8) | bytes[i + 1]!);
  if (groups.slice(0, 5).every((g) => g === 0) && groups[5] === 0xffff) {
    return `::ffff:${bytes[12]}.${bytes[13]}.${bytes[14]}.${bytes[15]}`;
  }
  let bestStart = -1;
  let bestLen = 0;
  for (let i = 0; i < 8; ) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLen && j - i > 1) {
      bestStart = i;
      bestLen = j - i;
    }
    i = j;
  }
  const hex = groups.map((g) => g.toString(16));
  if (bestStart < 0) return hex.join(":");
  return `${hex.slice(0, bestStart).join(":")}::${hex.slice(bestStart + bestLen).join(":")}`;
}

/** "1.2.3.4" for "::ffff:1.2.3.4", null for any other address. */
export function unmapV4(ip: string): string | null {
  if (!ip.includes(":")) return ip;
  const m = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip);
  return m ? m[1]! : null;
}

/** A Bun socket's address ("::ffff:1.2.3.4" or "1.2.3.4" or "::1") as a SockAddr. */
export function fromHostPort(ip: string, port: number): SockAddr {
  const v4 = unmapV4(ip);
  if (v4 && !ip.includes(":")) return { family: 4, ip: v4, port };
  if (v4) return { family: 4, ip: v4, port };
  return { family: 6, ip, port };
}

export function formatSockAddr(addr: SockAddr): string {
  return addr.family === 6 ? `[${addr.ip}]:${addr.port}` : `${addr.ip}:${addr.port}`;
}
