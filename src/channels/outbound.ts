import type dns from 'node:dns';
import { isIP } from 'node:net';
import { Agent } from 'undici';
import { errorChain } from '../error-chain.js';
import { AddressRefusedError, createGuardedConnector, refusalReason } from './address-guard.js';

/**
 * What every channel that POSTs to an address a subscriber gave (webhooks, chat robots)
 * shares: the Agent that connects only where the SSRF guard allows, and the reading of a
 * failed request. Each channel turns the reading into its own typed error.
 */

/** An Agent whose connections go through the address guard, every phase bounded by `timeoutMs`. */
export function createGuardedAgent(o: {
  allowPrivate: boolean;
  timeoutMs: number;
  lookup?: typeof dns.lookup | undefined;
}): Agent {
  return new Agent({
    connect: createGuardedConnector({
      allowPrivate: o.allowPrivate,
      connectTimeoutMs: o.timeoutMs,
      ...(o.lookup ? { lookup: o.lookup } : {}),
    }),
    headersTimeout: o.timeoutMs,
    bodyTimeout: o.timeoutMs,
  });
}

/**
 * The refusal of a URL whose host is an IP literal the guard forbids: no lookup happens for a
 * literal, so the connector never sees it. URL parsing already turned 2130706433, 0x7f.1 and
 * friends into dotted quads.
 */
export function refusedLiteral(url: URL, allowPrivate: boolean): AddressRefusedError | undefined {
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  const category = isIP(host) ? refusalReason(host, allowPrivate) : undefined;
  return category ? new AddressRefusedError(host, host, category) : undefined;
}

const TIMEOUT_CODES = new Set([
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
  'ETIMEDOUT',
]);

/** Why a request failed before any answer: refused by the guard, timed out, or another error. */
export interface TransportFailure {
  refused?: AddressRefusedError;
  timedOut: boolean;
  /** The first `code` in the error's cause chain (ECONNREFUSED, UND_ERR_…). */
  code?: string;
}

export function readTransportFailure(err: unknown, deadlineExpired: boolean): TransportFailure {
  const chain = errorChain(err);
  const refused = chain.find((e): e is AddressRefusedError => e instanceof AddressRefusedError);
  if (refused) return { refused, timedOut: false };
  const code = chain.map((e) => e.code).find((c): c is string => typeof c === 'string');
  return {
    timedOut: deadlineExpired || (code !== undefined && TIMEOUT_CODES.has(code)),
    ...(code === undefined ? {} : { code }),
  };
}
