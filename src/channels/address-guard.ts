import dns from 'node:dns';
import net, { type LookupFunction } from 'node:net';
import { buildConnector } from 'undici';

/**
 * The SSRF guard for webhook targets (docs/design.md). A subscriber's URL must not reach the
 * worker's own network: loopback, private, link-local, CGNAT, multicast and cloud metadata
 * addresses are refused unless WEBHOOK_ALLOW_PRIVATE is set. The check runs on the addresses
 * a hostname resolves to, inside the connector, so a DNS answer that changes between a check
 * and the connection (rebinding) cannot slip through; IP literals are checked before connecting.
 */

export type AddressCategory =
  | 'metadata'
  | 'unspecified'
  | 'loopback'
  | 'private'
  | 'link-local'
  | 'shared (CGNAT)'
  | 'multicast'
  | 'reserved';

export class AddressRefusedError extends Error {
  override readonly name = 'AddressRefusedError';
  constructor(
    readonly hostname: string,
    readonly address: string,
    readonly category: AddressCategory,
  ) {
    super(
      hostname === address
        ? `webhook target ${address} is a ${category} address; refused (WEBHOOK_ALLOW_PRIVATE is not set)`
        : `webhook target ${hostname} resolves to ${address}, a ${category} address; refused (WEBHOOK_ALLOW_PRIVATE is not set)`,
    );
  }
}

type Range = readonly [bytes: readonly number[], bits: number, category: AddressCategory];

// Metadata endpoints first: they are refused even when private targets are allowed.
const V4_RANGES: readonly Range[] = [
  [[169, 254, 169, 254], 32, 'metadata'], // AWS, GCP, Azure, most clouds
  [[100, 100, 100, 200], 32, 'metadata'], // Alibaba Cloud
  [[0, 0, 0, 0], 8, 'unspecified'], // "this network"; 0.0.0.0 reaches the local host on Linux
  [[127, 0, 0, 0], 8, 'loopback'],
  [[10, 0, 0, 0], 8, 'private'],
  [[172, 16, 0, 0], 12, 'private'],
  [[192, 168, 0, 0], 16, 'private'],
  [[169, 254, 0, 0], 16, 'link-local'],
  [[100, 64, 0, 0], 10, 'shared (CGNAT)'],
  [[224, 0, 0, 0], 4, 'multicast'],
  [[240, 0, 0, 0], 4, 'reserved'], // includes 255.255.255.255
  [[192, 0, 0, 0], 24, 'reserved'],
  [[192, 0, 2, 0], 24, 'reserved'],
  [[198, 18, 0, 0], 15, 'reserved'],
  [[198, 51, 100, 0], 24, 'reserved'],
  [[203, 0, 113, 0], 24, 'reserved'],
];

const V6_RANGES: readonly Range[] = [
  [[0xfd, 0x00, 0x0e, 0xc2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x02, 0x54], 128, 'metadata'], // AWS IPv6
  [[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0], 128, 'unspecified'],
  [[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1], 128, 'loopback'],
  [[0xfc], 7, 'private'],
  [[0xfe, 0xc0], 10, 'private'], // deprecated site-local
  [[0xfe, 0x80], 10, 'link-local'],
  [[0xff], 8, 'multicast'],
  [[0x00, 0x64, 0xff, 0x9b, 0x00, 0x01], 48, 'private'], // local-use NAT64
  [[0x01, 0x00, 0, 0, 0, 0, 0, 0], 64, 'reserved'], // discard-only
  [[0x20, 0x01, 0x0d, 0xb8], 32, 'reserved'], // documentation
  [[0x20, 0x01, 0x00, 0x00], 32, 'reserved'], // Teredo: tunnels to an address we cannot see
];

/** IPv6 prefixes whose last or embedded 32 bits are an IPv4 address that decides. */
const V4_EMBEDDING: readonly (readonly [prefix: readonly number[], bits: number, at: number])[] = [
  [[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff], 96, 12], // IPv4-mapped ::ffff:a.b.c.d
  [[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0], 96, 12], // IPv4-compatible ::a.b.c.d (deprecated)
  [[0x00, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0], 96, 12], // NAT64 64:ff9b::a.b.c.d
  [[0x20, 0x02], 16, 2], // 6to4 2002:aabb:ccdd::
];

function matches(bytes: Uint8Array, prefix: readonly number[], bits: number): boolean {
  for (let bit = 0; bit < bits; bit += 8) {
    const remaining = Math.min(8, bits - bit);
    const mask = (0xff << (8 - remaining)) & 0xff;
    const i = bit / 8;
    if (((bytes[i] ?? 0) & mask) !== ((prefix[i] ?? 0) & mask)) return false;
  }
  return true;
}

function parseIPv4(text: string): Uint8Array {
  return Uint8Array.from(text.split('.').map(Number));
}

/** 16 bytes from any valid IPv6 text (compressed, with an embedded dotted quad, with a zone). */
function parseIPv6(text: string): Uint8Array {
  let s = text.replace(/%.*$/, '');
  const dotted = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(s);
  if (dotted) {
    const [a, b, c, d] = dotted.slice(1).map(Number) as [number, number, number, number];
    const hex = (hi: number, lo: number) => ((hi << 8) | lo).toString(16);
    s = `${s.slice(0, dotted.index)}${hex(a, b)}:${hex(c, d)}`;
  }
  const groupsOf = (part: string): number[] =>
    part === '' ? [] : part.split(':').map((g) => parseInt(g, 16));
  const [head = '', rest] = s.split('::');
  const headGroups = groupsOf(head);
  const restGroups = rest === undefined ? [] : groupsOf(rest);
  const zeros = new Array<number>(8 - headGroups.length - restGroups.length).fill(0);
  const bytes = new Uint8Array(16);
  [...headGroups, ...zeros, ...restGroups].forEach((g, i) => {
    bytes[i * 2] = (g >> 8) & 0xff;
    bytes[i * 2 + 1] = g & 0xff;
  });
  return bytes;
}

function classifyV4(bytes: Uint8Array): AddressCategory | undefined {
  return V4_RANGES.find(([prefix, bits]) => matches(bytes, prefix, bits))?.[2];
}

/**
 * The category of a non-public address, or undefined for an ordinary public one. `ip` is
 * IPv4 dotted-quad or IPv6 text (brackets allowed); anything else is `reserved`.
 */
export function classifyAddress(ip: string): AddressCategory | undefined {
  const text = ip.startsWith('[') && ip.endsWith(']') ? ip.slice(1, -1) : ip;
  const family = net.isIP(text);
  if (family === 4) return classifyV4(parseIPv4(text));
  if (family !== 6) return 'reserved';
  const bytes = parseIPv6(text);
  const own = V6_RANGES.find(([prefix, bits]) => matches(bytes, prefix, bits))?.[2];
  if (own) return own;
  for (const [prefix, bits, at] of V4_EMBEDDING) {
    if (matches(bytes, prefix, bits)) return classifyV4(bytes.slice(at, at + 4));
  }
  return undefined;
}

/** Why `ip` may not be connected to under this policy, or undefined when it may. */
export function refusalReason(ip: string, allowPrivate: boolean): AddressCategory | undefined {
  const category = classifyAddress(ip);
  if (category === undefined) return undefined;
  // Cloud metadata hands out credentials: no subscriber has a reason to post there, ever.
  if (allowPrivate && category !== 'metadata') return undefined;
  return category;
}

/** A `net` lookup that drops refused addresses and fails when none is left. */
export function guardedLookup(
  allowPrivate: boolean,
  lookup: typeof dns.lookup = dns.lookup,
): LookupFunction {
  return (hostname, options, callback) => {
    lookup(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) {
        callback(err, '', undefined);
        return;
      }
      const all = addresses;
      const allowed = all.filter((a) => refusalReason(a.address, allowPrivate) === undefined);
      const first = allowed[0];
      if (!first) {
        const refused = all[0];
        const category = refused ? refusalReason(refused.address, allowPrivate) : undefined;
        callback(
          new AddressRefusedError(hostname, refused?.address ?? '?', category ?? 'reserved'),
          '',
          undefined,
        );
        return;
      }
      if (options.all) callback(null, allowed);
      else callback(null, first.address, first.family);
    });
  };
}

export interface GuardedConnectorOptions {
  allowPrivate: boolean;
  connectTimeoutMs: number;
  /** Replaces dns.lookup (tests point hostnames at chosen addresses). */
  lookup?: typeof dns.lookup;
}

/** An undici connector that only ever opens sockets to addresses the policy allows. */
export function createGuardedConnector(o: GuardedConnectorOptions): buildConnector.connector {
  const connect = buildConnector({
    timeout: o.connectTimeoutMs,
    lookup: guardedLookup(o.allowPrivate, o.lookup),
  });
  return (options, callback) => {
    const literal = options.hostname;
    if (net.isIP(literal)) {
      const category = refusalReason(literal, o.allowPrivate);
      if (category) {
        callback(new AddressRefusedError(literal, literal, category), null);
        return;
      }
    }
    connect(options, (err, socket) => {
      if (err !== null) {
        callback(err, null);
        return;
      }
      // Belt and braces: judge the peer the socket actually reached, whatever resolved it.
      const remote = socket.remoteAddress;
      const category = remote ? refusalReason(remote, o.allowPrivate) : undefined;
      if (remote && category) {
        socket.destroy();
        callback(new AddressRefusedError(options.hostname, remote, category), null);
        return;
      }
      callback(null, socket);
    });
  };
}
