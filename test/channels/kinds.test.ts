import { describe, expect, it } from 'vitest';
import {
  CHANNEL_KINDS,
  CHANNELS,
  CHANNELS_SHOWN,
  channelOfAddress,
  channelsWhere,
  kindOf,
  subscriberChannelSql,
} from '../../src/channels/kinds.js';

describe('the channels and their traits', () => {
  it('groups a cycle for email and chat robots, and sends webhooks one by one', () => {
    expect(kindOf('email').defaultGroup).toBe('cycle');
    expect(kindOf('webhook').defaultGroup).toBe('none');
    expect(kindOf('robot').defaultGroup).toBe('cycle');
  });

  it('claims a robot post every time, and lets the planned job send the others unclaimed', () => {
    expect(channelsWhere((k) => k.ownedFirstAttempt)).toBe(`'webhook', 'email'`);
    expect(channelsWhere((k) => k.alwaysScheduled)).toBe(`'robot'`);
  });

  it('tells a subscriber’s channel by its one address, in JavaScript and in SQL alike', () => {
    expect(channelOfAddress({ email: 'a@example.com', webhook_url: null, robot_url: null })).toBe(
      'email',
    );
    expect(
      channelOfAddress({ email: null, webhook_url: 'https://h.example', robot_url: null }),
    ).toBe('webhook');
    expect(
      channelOfAddress({ email: null, webhook_url: null, robot_url: 'https://r.example' }),
    ).toBe('robot');
    expect(subscriberChannelSql('u')).toBe(
      `CASE WHEN u.webhook_url IS NOT NULL THEN 'webhook' WHEN u.robot_url IS NOT NULL THEN 'robot' ` +
        `WHEN u.email IS NOT NULL THEN 'email' END`,
    );
  });

  it('names every channel once, each with its own address column', () => {
    expect([...CHANNELS].sort()).toEqual(Object.keys(CHANNEL_KINDS).sort());
    expect([...CHANNELS_SHOWN].sort()).toEqual([...CHANNELS].sort());
    const columns = CHANNELS.map((c) => kindOf(c).addressColumn);
    expect(new Set(columns).size).toBe(CHANNELS.length);
    for (const c of CHANNELS) expect(kindOf(c).name).toBe(c);
  });
});
