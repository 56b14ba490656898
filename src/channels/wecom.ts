import type { RobotVendorAdapter } from './robot-vendor.js';
import { codelessVerdict, readCode, verdictForCode } from './robot-vendor.js';

/**
 * WeCom group robots (notes/chat-robots.md): no signing, the key in the URL is the credential;
 * answers are HTTP 200 with `errcode`.
 */

/** How long a 45009 lock lasts is not documented; a minute is the length of the counted window. */
const RATE_LIMIT_LOCK_MS = 60_000;

const CODES = {
  rateLimited: [45009],
  // 93000 invalid key / robot removed, 93004 robot disabled, 93008 robot not in the group.
  gone: [93000, 93004, 93008],
  // 40058 content too long, 44004 empty content, 40008 message type not accepted.
  refused: [40058, 44004, 40008],
} as const;

export const wecom: RobotVendorAdapter = {
  vendor: 'wecom',
  rateLimitLockMs: RATE_LIMIT_LOCK_MS,
  request(url, body) {
    return { url, body: JSON.stringify(body) };
  },
  classify(answer) {
    const { code, message } = readCode(answer, 'errcode', 'errmsg');
    if (code === undefined) return codelessVerdict('errcode');
    return verdictForCode(code, message, CODES, RATE_LIMIT_LOCK_MS);
  },
};
