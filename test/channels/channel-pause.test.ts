import { describe, expect, it } from 'vitest';
import {
  ChannelPause,
  FIRST_PAUSE_MS,
  LONGEST_PAUSE_MS,
} from '../../src/channels/channel-pause.js';
import { classifySmtpError } from '../../src/channels/email.js';

describe('ChannelPause', () => {
  const clock = (start = 1_800_000_000_000) => {
    let t = start;
    return { now: () => new Date(t), advance: (ms: number) => (t += ms) };
  };

  it('is open until refused, then pauses 30 s, doubling to 5 min while refusals go on', () => {
    const c = clock();
    const pause = new ChannelPause(c.now);
    expect(pause.remainingMs()).toBe(0);
    expect(pause.snapshot()).toEqual({ paused: false, reason: null, since: null, retryAt: null });

    const lengths: number[] = [];
    for (let i = 0; i < 6; i += 1) {
      lengths.push(pause.refused('535 bad credentials'));
      c.advance(lengths.at(-1)!);
      expect(pause.remainingMs()).toBe(0);
    }
    expect(lengths).toEqual([30_000, 60_000, 120_000, 240_000, 300_000, 300_000]);
    expect(lengths[0]).toBe(FIRST_PAUSE_MS);
    expect(Math.max(...lengths)).toBe(LONGEST_PAUSE_MS);
    expect(pause.snapshot()).toMatchObject({ paused: true, reason: '535 bad credentials' });
  });

  it('is not lengthened by a refusal that arrives while paused (a send already under way)', () => {
    const c = clock();
    const pause = new ChannelPause(c.now);
    pause.refused('first');
    c.advance(10_000);
    expect(pause.refused('second')).toBe(20_000);
    expect(pause.remainingMs()).toBe(20_000);
  });

  it('opens at the first accepted send and starts again from 30 s', () => {
    const c = clock();
    const pause = new ChannelPause(c.now);
    pause.refused('535');
    c.advance(FIRST_PAUSE_MS);
    pause.refused('535');
    expect(pause.accepted()).toBe(true);
    expect(pause.accepted()).toBe(false);
    expect(pause.remainingMs()).toBe(0);
    expect(pause.snapshot().paused).toBe(false);
    expect(pause.refused('535')).toBe(FIRST_PAUSE_MS);
  });
});

describe('classifySmtpError: a refused login refuses the channel, not the message', () => {
  it.each([
    [{ code: 'EAUTH', responseCode: 535, response: '535 5.7.8 Authentication failed' }],
    [
      {
        code: 'EAUTH',
        responseCode: 534,
        response: '534 5.7.9 Application-specific password required',
      },
    ],
    [{ code: 'EENVELOPE', responseCode: 530, response: '530 5.7.0 Authentication required' }],
    [{ code: 'ENOAUTH' }],
  ])('%o', (fields) => {
    const err = classifySmtpError(Object.assign(new Error('login failed'), fields));
    expect(err.channelRefused).toBe(true);
    expect(err.retryable).toBe(true);
    expect(err.message).toMatch(
      /^SMTP server refused the login.*check the user and password of SMTP_URL$/,
    );
  });

  it('leaves a refused recipient permanent and a busy mailbox retryable, both the message’s own', () => {
    const rcpt = classifySmtpError(Object.assign(new Error('x'), { responseCode: 550 }));
    expect([rcpt.retryable, rcpt.channelRefused]).toEqual([false, false]);
    const busy = classifySmtpError(Object.assign(new Error('x'), { responseCode: 451 }));
    expect([busy.retryable, busy.channelRefused]).toEqual([true, false]);
  });
});
