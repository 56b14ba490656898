import { describe, expect, it } from 'vitest';
import {
  describeRobot,
  robotCredential,
  robotFingerprint,
  robotKey,
  robotUrlProblem,
} from '../../src/channels/robot-identity.js';
import { scrub } from '../../src/logger.js';

const WECOM =
  'https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=693a91f6-7f2c-4bc4-97a0-0ec2a1fa5aaa';
const DINGTALK =
  'https://oapi.dingtalk.com/robot/send?access_token=7c1f0e2d9b8a7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f1a0b9c8d7e6f5a4b3c2d';
const FEISHU = 'https://open.feishu.cn/open-apis/bot/v2/hook/2f0c3a6e-8b1d-4c5e-9f7a-1b2c3d4e5f60';
const LARK =
  'https://open.larksuite.com/open-apis/bot/v2/hook/9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d';

describe('robot identity', () => {
  it('names a robot by host and the first 8 hex of the URL sha256, never by its credential', () => {
    expect(robotKey(WECOM)).toMatch(/^[0-9a-f]{64}$/);
    expect(robotFingerprint(WECOM)).toBe(robotKey(WECOM).slice(0, 8));
    expect(describeRobot(WECOM)).toBe(`qyapi.weixin.qq.com#${robotFingerprint(WECOM)}`);
    expect(describeRobot(LARK)).toMatch(/^open\.larksuite\.com#[0-9a-f]{8}$/);
    for (const url of [WECOM, DINGTALK, FEISHU, LARK]) {
      const credential = robotCredential(url)!;
      expect(credential.length).toBeGreaterThan(20);
      expect(describeRobot(url)).not.toContain(credential);
    }
    expect(describeRobot('not a url ?key=supersecretvalue')).toMatch(/^invalid-url#[0-9a-f]{8}$/);
  });

  it('is stable for the same robot and differs between robots', () => {
    expect(robotFingerprint(` ${WECOM}`)).toBe(robotFingerprint(WECOM));
    expect(robotFingerprint(WECOM)).not.toBe(robotFingerprint(`${WECOM}b`));
    expect(new Set([WECOM, DINGTALK, FEISHU, LARK].map(robotFingerprint)).size).toBe(4);
  });

  it('checks the shape each vendor documents, without quoting the URL', () => {
    expect(robotUrlProblem('wecom', WECOM)).toBeUndefined();
    expect(robotUrlProblem('dingtalk', DINGTALK)).toBeUndefined();
    expect(robotUrlProblem('feishu', FEISHU)).toBeUndefined();
    expect(robotUrlProblem('feishu', LARK)).toBeUndefined();
    expect(robotUrlProblem('wecom', 'https://qyapi.weixin.qq.com/cgi-bin/webhook/send')).toMatch(
      /has no key= parameter/,
    );
    expect(robotUrlProblem('dingtalk', WECOM)).toMatch(/has no access_token= parameter/);
    expect(robotUrlProblem('feishu', `${FEISHU}/extra`)).toMatch(
      /not a \/open-apis\/bot\/v2\/hook/,
    );
    expect(robotUrlProblem('wecom', 'ftp://x/?key=abcdefgh')).toMatch(/must be https/);
    expect(robotUrlProblem('wecom', 'nope')).toMatch(/not a valid absolute URL/);
    const problem = robotUrlProblem('feishu', `${WECOM}&x=1`)!;
    expect(problem).not.toContain(robotCredential(WECOM)!);
  });

  it('the logger scrubs every vendor credential from URLs in text', () => {
    for (const url of [WECOM, DINGTALK, FEISHU, LARK]) {
      const line = scrub(`posting to ${url} failed`);
      expect(line).not.toContain(robotCredential(url)!);
      expect(line).toContain('[redacted]');
    }
    expect(scrub('...&timestamp=1&sign=abc%2Bdef')).toBe('...&timestamp=1&sign=[redacted]');
  });
});
