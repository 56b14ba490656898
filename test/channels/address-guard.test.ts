import type dns from 'node:dns';
import { describe, expect, it } from 'vitest';
import {
  AddressRefusedError,
  classifyAddress,
  createGuardedConnector,
  guardedLookup,
  refusalReason,
} from '../../src/channels/address-guard.js';

describe('classifyAddress', () => {
  const cases: [string, ReturnType<typeof classifyAddress>][] = [
    ['127.0.0.1', 'loopback'],
    ['127.255.0.9', 'loopback'],
    ['::1', 'loopback'],
    ['10.0.0.1', 'private'],
    ['172.16.5.4', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.1.1', 'private'],
    ['fc00::1', 'private'],
    ['fd12:3456::1', 'private'],
    ['169.254.1.1', 'link-local'],
    ['fe80::1', 'link-local'],
    ['fe80::1%eth0', 'link-local'],
    ['100.64.0.1', 'shared (CGNAT)'],
    ['100.127.255.254', 'shared (CGNAT)'],
    ['0.0.0.0', 'unspecified'],
    ['::', 'unspecified'],
    ['224.0.0.1', 'multicast'],
    ['ff02::1', 'multicast'],
    ['169.254.169.254', 'metadata'],
    ['100.100.100.200', 'metadata'],
    ['fd00:ec2::254', 'metadata'],
    ['255.255.255.255', 'reserved'],
    ['192.0.2.10', 'reserved'],
    // IPv4 hidden inside IPv6
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:7f00:1', 'loopback'],
    ['[::ffff:7f00:1]', 'loopback'],
    ['::ffff:169.254.169.254', 'metadata'],
    ['::ffff:10.1.2.3', 'private'],
    ['64:ff9b::c0a8:101', 'private'],
    ['2002:7f00:1::', 'loopback'],
    // public
    ['8.8.8.8', undefined],
    ['172.32.0.1', undefined],
    ['100.128.0.1', undefined],
    ['2606:4700:4700::1111', undefined],
    ['::ffff:8.8.8.8', undefined],
    ['64:ff9b::808:808', undefined],
    // not an address at all
    ['example.com', 'reserved'],
  ];
  for (const [address, category] of cases) {
    it(`${address} → ${category ?? 'public'}`, () => {
      expect(classifyAddress(address)).toBe(category);
    });
  }
});

describe('refusalReason', () => {
  it('refuses non-public addresses unless private targets are allowed', () => {
    expect(refusalReason('127.0.0.1', false)).toBe('loopback');
    expect(refusalReason('127.0.0.1', true)).toBeUndefined();
    expect(refusalReason('10.0.0.1', true)).toBeUndefined();
    expect(refusalReason('8.8.8.8', false)).toBeUndefined();
  });

  it('refuses cloud metadata endpoints even when private targets are allowed', () => {
    expect(refusalReason('169.254.169.254', true)).toBe('metadata');
    expect(refusalReason('fd00:ec2::254', true)).toBe('metadata');
  });
});

/** A dns.lookup stand-in that answers every name with fixed addresses. */
function fixedLookup(addresses: dns.LookupAddress[]): typeof dns.lookup {
  return ((_host: string, _options: unknown, callback: (...args: unknown[]) => void) => {
    callback(null, addresses);
  }) as unknown as typeof dns.lookup;
}

function runLookup(
  lookup: ReturnType<typeof guardedLookup>,
  all: boolean,
): Promise<{ address: string | dns.LookupAddress[]; family?: number }> {
  return new Promise((resolve, reject) => {
    lookup('hooks.example.test', { all }, (err, address, family) => {
      if (err) reject(err);
      else resolve({ address, family });
    });
  });
}

describe('guardedLookup', () => {
  it('refuses a name that resolves only to refused addresses, naming both', async () => {
    const lookup = guardedLookup(false, fixedLookup([{ address: '127.0.0.1', family: 4 }]));
    const failure = runLookup(lookup, false);
    await expect(failure).rejects.toBeInstanceOf(AddressRefusedError);
    await expect(failure).rejects.toThrow(/hooks\.example\.test resolves to 127\.0\.0\.1/);
  });

  it('drops refused addresses and connects to the allowed ones only', async () => {
    const lookup = guardedLookup(
      false,
      fixedLookup([
        { address: '10.0.0.5', family: 4 },
        { address: '93.184.216.34', family: 4 },
        { address: '::1', family: 6 },
      ]),
    );
    expect(await runLookup(lookup, false)).toEqual({ address: '93.184.216.34', family: 4 });
    expect(await runLookup(lookup, true)).toEqual({
      address: [{ address: '93.184.216.34', family: 4 }],
      family: undefined,
    });
  });

  it('lets private addresses through when allowed', async () => {
    const lookup = guardedLookup(true, fixedLookup([{ address: '127.0.0.1', family: 4 }]));
    expect(await runLookup(lookup, false)).toEqual({ address: '127.0.0.1', family: 4 });
  });
});

describe('createGuardedConnector', () => {
  function connectError(hostname: string, allowPrivate: boolean): Promise<Error | null> {
    const connect = createGuardedConnector({ allowPrivate, connectTimeoutMs: 1_000 });
    return new Promise((resolve) => {
      connect({ hostname, protocol: 'http:', port: '9' }, (err, socket) => {
        socket?.destroy();
        resolve(err);
      });
    });
  }

  it('refuses IP literals before opening a socket, whichever dispatcher path led here', async () => {
    for (const literal of ['127.0.0.1', '::ffff:7f00:1', '::1', '10.0.0.1', '169.254.169.254']) {
      const err = await connectError(literal, false);
      expect(err).toBeInstanceOf(AddressRefusedError);
      expect((err as AddressRefusedError).address).toBe(literal);
    }
    expect(await connectError('169.254.169.254', true)).toBeInstanceOf(AddressRefusedError);
  });
});
