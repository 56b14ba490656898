import { createHash } from 'node:crypto';
import type { RobotVendor } from '../domain/robot-render.js';

/**
 * A chat robot's URL is both its identity and its only credential (docs/messages.md): WeCom's `key`,
 * DingTalk's `access_token` and Feishu's hook path let anyone post into the group. Logs, errors
 * and the CLI name a robot by its host and a short fingerprint of the whole URL instead.
 */

function normalized(url: string): string {
  const trimmed = url.trim();
  try {
    return new URL(trimmed).href;
  } catch {
    return trimmed;
  }
}

/** sha256 of the normalized URL, hex: a stable key for one robot (rate limits, lookups). */
export function robotKey(url: string): string {
  return createHash('sha256').update(normalized(url)).digest('hex');
}

/** First 8 hex digits of `robotKey`: enough to tell a subscriber's robots apart by eye. */
export function robotFingerprint(url: string): string {
  return robotKey(url).slice(0, 8);
}

/** `qyapi.weixin.qq.com#1a2b3c4d`: how a robot appears in logs, errors and CLI output. */
export function describeRobot(url: string): string {
  let host = 'invalid-url';
  try {
    host = new URL(url.trim()).host || host;
  } catch {
    // Named by the fingerprint alone; the text itself may hold the key.
  }
  return `${host}#${robotFingerprint(url)}`;
}

const FEISHU_HOOK_PATH = /^\/open-apis\/bot\/v2\/hook\/[^/]+$/;

/**
 * What is wrong with a robot URL for its vendor, or undefined when it has the shape the vendor
 * documents. The problem never quotes the URL. Hosts are not checked: tests and demos point
 * robots at loopback (WEBHOOK_ALLOW_PRIVATE); the address guard decides where a post may go.
 */
export function robotUrlProblem(vendor: RobotVendor, url: string): string | undefined {
  let parsed: URL;
  try {
    parsed = new URL(url.trim());
  } catch {
    return `${vendor} robot URL is not a valid absolute URL`;
  }
  if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:') {
    return `${vendor} robot URL must be https, not ${parsed.protocol}`;
  }
  const where = describeRobot(url);
  switch (vendor) {
    case 'wecom':
      return parsed.searchParams.get('key')
        ? undefined
        : `wecom robot URL ${where} has no key= parameter`;
    case 'dingtalk':
      return parsed.searchParams.get('access_token')
        ? undefined
        : `dingtalk robot URL ${where} has no access_token= parameter`;
    case 'feishu':
      return FEISHU_HOOK_PATH.test(parsed.pathname)
        ? undefined
        : `feishu robot URL ${where} is not a /open-apis/bot/v2/hook/<token> URL`;
  }
}

/** The credential inside a robot URL (key, access token or hook token), to scrub from text. */
export function robotCredential(url: string): string | undefined {
  try {
    const parsed = new URL(url.trim());
    return (
      parsed.searchParams.get('key') ??
      parsed.searchParams.get('access_token') ??
      /\/hook\/([^/]+)$/.exec(parsed.pathname)?.[1] ??
      undefined
    );
  } catch {
    return undefined;
  }
}
