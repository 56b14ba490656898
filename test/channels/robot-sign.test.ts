import { describe, expect, it } from 'vitest';
import { dingtalkSign, dingtalkSignedUrl, feishuSign } from '../../src/channels/robot-sign.js';

/**
 * Fixed vectors, computed outside this code base (2026-11-25) with OpenSSL and checked with
 * Python's hmac module, straight from the vendors' documented recipes:
 *
 *   DingTalk: printf '%s\n%s' "$TS_MS" "$SECRET" | openssl dgst -sha256 -hmac "$SECRET" -binary | base64
 *             python3: base64.b64encode(hmac.new(secret, f"{ts}\n{secret}", sha256).digest());
 *                      the query value is urllib.parse.quote_plus of that
 *   Feishu:   printf '' | openssl dgst -sha256 -hmac "$(printf '%s\n%s' "$TS_S" "$SECRET")" -binary | base64
 *             python3: base64.b64encode(hmac.new(f"{ts}\n{secret}", b"", sha256).digest())
 *
 * The secrets are made up for the test.
 */
const DINGTALK_SECRET = 'SECb7d1f0c2e9a84d3f8c6a5e4b3d2c1f0a9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4';
const FEISHU_SECRET = 'qDk3vX9pL2mN8rT5wY7zA1bC4eF6gH0j';

describe('DingTalk signature', () => {
  it('matches the fixed vectors', () => {
    expect(dingtalkSign(DINGTALK_SECRET, 1782892800000)).toBe(
      'MJJoAPqTfMHmxMz7Ok/VJMSPFo2iaeGGqBvhfzDqWx4=',
    );
    expect(dingtalkSign(DINGTALK_SECRET, 1782892800002)).toBe(
      'gUXbmbjPry028lnCrpxCwF+t6/o8MnECqHGKzsWgv78=',
    );
  });

  it('goes in the query as timestamp (ms) and the URL-encoded sign, next to the token', () => {
    const url = new URL('https://oapi.dingtalk.com/robot/send?access_token=abc123');
    const signed = dingtalkSignedUrl(url, DINGTALK_SECRET, 1782892800002);
    // + / = percent-encoded, as quote_plus encodes them.
    expect(signed.search).toBe(
      '?access_token=abc123&timestamp=1782892800002&sign=gUXbmbjPry028lnCrpxCwF%2Bt6%2Fo8MnECqHGKzsWgv78%3D',
    );
    expect(url.search).toBe('?access_token=abc123');
  });
});

describe('Feishu signature', () => {
  it('matches the fixed vector (key = timestamp + "\\n" + secret, empty message)', () => {
    expect(feishuSign(FEISHU_SECRET, 1782892800)).toBe(
      'zd6wgaFtamIYAYTHQloZzicJDy/mcxNUpytTJzLLLI8=',
    );
  });
});
