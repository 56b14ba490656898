import { dingtalkSignedUrl } from './robot-sign.js';
import type { RobotVendorAdapter } from './robot-vendor.js';
import { codelessVerdict, readCode, verdictForCode } from './robot-vendor.js';

/**
 * DingTalk custom robots (notes/chat-robots.md): signed in the query (`timestamp` in ms, `sign`),
 * answers are HTTP 200 with `errcode`. The body's `msgUuid` (the message id, set by the
 * renderer) makes a retry of a post DingTalk already took a no-op.
 */

/** Going over 20 a minute "triggers a 10-minute rate limit". */
const RATE_LIMIT_LOCK_MS = 10 * 60_000;

const CODES = {
  // 410100 rate-limited; 130101 is the legacy "send too fast, exceed 20 times per minute".
  rateLimited: [130101, 410100],
  // 300001 / 300005 token does not exist (legacy), 400013 group dissolved, 400101 token does not
  // exist, 400102 robot disabled, 400106 robot does not exist.
  gone: [300001, 300005, 400013, 400101, 400102, 400106],
  // 310000 security check failed (keyword, timestamp, signature, IP); 430101–430104 content refused.
  refused: [310000, 430101, 430102, 430103, 430104],
} as const;

export const dingtalk: RobotVendorAdapter = {
  vendor: 'dingtalk',
  rateLimitLockMs: RATE_LIMIT_LOCK_MS,
  request(url, body, secret, at) {
    return {
      url: secret ? dingtalkSignedUrl(url, secret, at.getTime()) : url,
      body: JSON.stringify(body),
    };
  },
  classify(answer) {
    const { code, message } = readCode(answer, 'errcode', 'errmsg');
    if (code === undefined) return codelessVerdict('errcode');
    return verdictForCode(code, message, CODES, RATE_LIMIT_LOCK_MS);
  },
};
