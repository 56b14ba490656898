import { feishuSign } from './robot-sign.js';
import type { RobotVendorAdapter } from './robot-vendor.js';
import { codelessVerdict, readCode, verdictForCode } from './robot-vendor.js';

/**
 * Feishu / Lark custom bots (notes/chat-robots.md): signed in the JSON body (`timestamp` in
 * seconds, `sign`); success is `code: 0` (`StatusCode` is a legacy field and is not trusted).
 */

/** 11232's lock length is not documented; a minute is the longer of the two counted windows. */
const RATE_LIMIT_LOCK_MS = 60_000;

const CODES = {
  rateLimited: [11232],
  // 19001 access token invalid (observed when the bot is removed).
  gone: [19001],
  // 9499 bad request, 19021 signature or timestamp refused, 19022 IP not allowed, 19024 keyword.
  refused: [9499, 19021, 19022, 19024],
} as const;

export const feishu: RobotVendorAdapter = {
  vendor: 'feishu',
  rateLimitLockMs: RATE_LIMIT_LOCK_MS,
  request(url, body, secret, at) {
    if (!secret) return { url, body: JSON.stringify(body) };
    const timestamp = Math.floor(at.getTime() / 1000);
    const signed = { timestamp: String(timestamp), sign: feishuSign(secret, timestamp), ...body };
    return { url, body: JSON.stringify(signed) };
  },
  classify(answer) {
    const { code, message } = readCode(answer, 'code', 'msg');
    if (code === undefined) return codelessVerdict('code');
    return verdictForCode(code, message, CODES, RATE_LIMIT_LOCK_MS);
  },
};
