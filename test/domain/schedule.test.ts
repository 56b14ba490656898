import { describe, expect, it } from 'vitest';
import {
  CYCLE_WAIT_LIMIT_MS,
  isUrgent,
  placeNotification,
  quietWindowAt,
  type DeliveryPrefs,
  type OpenMessage,
  type QuietHours,
} from '../../src/domain/schedule.js';
import { simulate } from '../../src/domain/schedule-simulation.js';

const NIGHT: QuietHours = { from: '22:00', to: '07:00', bypassLevel: '红色' };

const prefs = (overrides: Partial<DeliveryPrefs> = {}): DeliveryPrefs => ({
  group: { kind: 'none' },
  timezone: 'Asia/Shanghai',
  quietHours: null,
  maxPerHour: null,
  ...overrides,
});

const at = (iso: string) => new Date(iso);
const yellow = { level: '黄色' as const, urgent: false, cycleId: 'c1' };

const openMessage = (overrides: Partial<OpenMessage> & { id: string }): OpenMessage => ({
  hold: 'cycle',
  cycleId: 'c1',
  sendAt: at('2026-07-01T08:01:00Z'),
  ...overrides,
});

describe('a message waiting for its slot (throttle)', () => {
  const now = at('2026-07-01T08:00:00Z');
  // A robot's rate limit set this message back to open 'throttle', due in 40 s.
  const waiting = openMessage({
    id: 'w',
    hold: 'throttle',
    cycleId: null,
    sendAt: at('2026-07-01T08:00:40Z'),
  });

  it.each([
    ['none', { kind: 'none' }],
    ['cycle of another cycle', { kind: 'cycle' }],
    ['window', { kind: 'window', seconds: 30 }],
  ] as const)('is joined under grouping %s', (_name, group) => {
    expect(
      placeNotification({
        now,
        prefs: prefs({ group }),
        notification: { ...yellow, cycleId: 'c2' },
        open: [waiting],
        recentSends: [],
      }),
    ).toEqual({ join: 'w' });
  });

  it('is joined by an urgent notification too, which cannot go before it anyway', () => {
    expect(
      placeNotification({
        now,
        prefs: prefs({ quietHours: NIGHT }),
        notification: { level: '红色', urgent: true, cycleId: 'c2' },
        open: [waiting],
        recentSends: [],
      }),
    ).toEqual({ join: 'w' });
  });

  it('is not joined when it is about to be sent, nor by a notification held by quiet hours', () => {
    expect(
      placeNotification({
        now,
        prefs: prefs(),
        notification: yellow,
        open: [{ ...waiting, sendAt: at('2026-07-01T08:00:01Z') }],
        recentSends: [],
      }),
    ).toEqual({ create: { hold: null, sendAt: now, cycleId: null } });
    const night = at('2026-07-01T15:00:00Z'); // 23:00 in Shanghai
    const placement = placeNotification({
      now: night,
      prefs: prefs({ quietHours: NIGHT }),
      notification: yellow,
      open: [{ ...waiting, sendAt: at('2026-07-01T15:00:40Z') }],
      recentSends: [],
    });
    expect(placement).toEqual({
      create: { hold: 'quiet', sendAt: at('2026-07-01T23:00:00Z'), cycleId: null },
    });
  });
});

describe('isUrgent', () => {
  it('is urgent at and above the bypass level only', () => {
    expect(isUrgent('红色', NIGHT, false)).toBe(true);
    expect(isUrgent('橙色', NIGHT, false)).toBe(false);
    expect(isUrgent('橙色', { ...NIGHT, bypassLevel: '橙色' }, false)).toBe(true);
    expect(isUrgent('红色', { ...NIGHT, bypassLevel: '橙色' }, false)).toBe(true);
  });

  it('never treats an unknown level or a missing bypass level as urgent', () => {
    expect(isUrgent('unknown', { ...NIGHT, bypassLevel: '白色' }, false)).toBe(false);
    expect(isUrgent('红色', { ...NIGHT, bypassLevel: null }, false)).toBe(false);
    expect(isUrgent('红色', null, false)).toBe(false);
  });

  it('stays urgent along a chain that already was, whatever the level now', () => {
    expect(isUrgent('黄色', NIGHT, true)).toBe(true);
    expect(isUrgent('unknown', null, true)).toBe(true);
  });
});

describe('quietWindowAt', () => {
  const window = (iso: string, timezone: string, quiet: QuietHours = NIGHT) => {
    const w = quietWindowAt(at(iso), timezone, quiet);
    return w && [w.start.toISOString(), w.end.toISOString()];
  };

  it('finds a window over midnight from either side of midnight', () => {
    const expected = ['2026-07-01T14:00:00.000Z', '2026-07-01T23:00:00.000Z'];
    expect(window('2026-07-01T14:00:00Z', 'Asia/Shanghai')).toEqual(expected); // 22:00 local
    expect(window('2026-07-01T17:30:00Z', 'Asia/Shanghai')).toEqual(expected); // 01:30 local
    expect(window('2026-07-01T22:59:59.999Z', 'Asia/Shanghai')).toEqual(expected);
  });

  it('excludes the end and everything outside', () => {
    expect(window('2026-07-01T23:00:00Z', 'Asia/Shanghai')).toBeNull(); // 07:00 local
    expect(window('2026-07-01T13:59:59.999Z', 'Asia/Shanghai')).toBeNull();
    expect(window('2026-07-01T06:00:00Z', 'Asia/Shanghai')).toBeNull();
  });

  it('handles a window within one day and a half-hour zone', () => {
    const day = { from: '09:00', to: '17:00', bypassLevel: null };
    expect(window('2026-07-01T04:00:00Z', 'Asia/Kolkata', day)).toEqual([
      '2026-07-01T03:30:00.000Z',
      '2026-07-01T11:30:00.000Z',
    ]);
    expect(window('2026-07-01T12:00:00Z', 'Asia/Kolkata', day)).toBeNull();
  });

  it('follows the wall clock over DST changes (New York)', () => {
    // Spring forward on 2026-03-08: 22:00 EST to 07:00 EDT is 8 hours.
    expect(window('2026-03-08T05:00:00Z', 'America/New_York')).toEqual([
      '2026-03-08T03:00:00.000Z',
      '2026-03-08T11:00:00.000Z',
    ]);
    // Fall back on 2026-11-01: 22:00 EDT to 07:00 EST is 10 hours.
    expect(window('2026-11-01T05:00:00Z', 'America/New_York')).toEqual([
      '2026-11-01T02:00:00.000Z',
      '2026-11-01T12:00:00.000Z',
    ]);
  });

  it('keeps the free time between windows on the spring-forward night', () => {
    // Quiet 02:59-02:00 leaves 59 free minutes; on 2026-03-08 both times fall in the gap. The
    // window ends when the clock jumps (07:00Z) and the next begins 59 minutes later.
    const narrow = { from: '02:59', to: '02:00', bypassLevel: null };
    expect(window('2026-03-08T06:00:00Z', 'America/New_York', narrow)).toEqual([
      '2026-03-07T07:59:00.000Z',
      '2026-03-08T07:00:00.000Z',
    ]);
    expect(window('2026-03-08T07:30:00Z', 'America/New_York', narrow)).toBeNull();
    expect(window('2026-03-08T07:59:00Z', 'America/New_York', narrow)?.[0]).toBe(
      '2026-03-08T07:59:00.000Z',
    );
  });

  it('runs on to the next end when the spring gap is all the free time between windows', () => {
    // Quiet 03:00-02:00 leaves 02:00-03:00 free, the very hour 2026-03-08 skips: the window of
    // the 7th ends as the clock jumps (07:00Z), the instant the next begins, so the quiet runs
    // on to 02:00 EDT on the 9th (06:00Z) (found by the simulation's property test).
    const allButTwo = { from: '03:00', to: '02:00', bypassLevel: null };
    expect(window('2026-03-07T20:00:00Z', 'America/New_York', allButTwo)).toEqual([
      '2026-03-07T08:00:00.000Z',
      '2026-03-09T06:00:00.000Z',
    ]);
    expect(window('2026-03-09T06:00:00Z', 'America/New_York', allButTwo)).toBeNull();
    // Any other night keeps its free hour: 02:00-03:00 EST on the 7th is 07:00Z-08:00Z.
    expect(window('2026-03-07T07:30:00Z', 'America/New_York', allButTwo)).toBeNull();
  });

  it('starts a window whose start the spring gap skips by the length of the gap', () => {
    const gap = { from: '02:30', to: '04:00', bypassLevel: null };
    // 02:30 does not exist on 2026-03-08: the window starts at 03:30 EDT (07:30Z), ends 08:00Z.
    expect(window('2026-03-08T07:40:00Z', 'America/New_York', gap)).toEqual([
      '2026-03-08T07:30:00.000Z',
      '2026-03-08T08:00:00.000Z',
    ]);
    expect(window('2026-03-08T07:10:00Z', 'America/New_York', gap)).toBeNull();
  });

  it('begins at the first occurrence of a repeated time in the autumn overlap', () => {
    const overlap = { from: '01:30', to: '02:30', bypassLevel: null };
    // 01:30 EDT (05:30Z), the clock goes back at 06:00Z, 02:30 EST is 07:30Z.
    expect(window('2026-11-01T05:45:00Z', 'America/New_York', overlap)).toEqual([
      '2026-11-01T05:30:00.000Z',
      '2026-11-01T07:30:00.000Z',
    ]);
  });

  it('has no window for equal or malformed times', () => {
    expect(window('2026-07-01T17:00:00Z', 'UTC', { ...NIGHT, to: '22:00' })).toBeNull();
    expect(window('2026-07-01T17:00:00Z', 'UTC', { ...NIGHT, from: '24:00' })).toBeNull();
  });
});

describe('placeNotification: grouping', () => {
  const now = at('2026-07-01T08:00:00Z');

  it("'none' sends each notification at once on its own", () => {
    expect(
      placeNotification({
        now,
        prefs: prefs(),
        notification: yellow,
        open: [openMessage({ id: 'm1', hold: 'window' })],
        recentSends: [],
      }),
    ).toEqual({ create: { hold: null, sendAt: now, cycleId: null } });
  });

  it("'cycle' joins its own cycle's open message, else opens one due in 60 s", () => {
    const group = { kind: 'cycle' } as const;
    const open = [openMessage({ id: 'other', cycleId: 'c0' }), openMessage({ id: 'mine' })];
    expect(
      placeNotification({
        now,
        prefs: prefs({ group }),
        notification: yellow,
        open,
        recentSends: [],
      }),
    ).toEqual({ join: 'mine' });
    expect(
      placeNotification({
        now,
        prefs: prefs({ group }),
        notification: yellow,
        open: open.slice(0, 1),
        recentSends: [],
      }),
    ).toEqual({
      create: {
        hold: 'cycle',
        sendAt: new Date(now.getTime() + CYCLE_WAIT_LIMIT_MS),
        cycleId: 'c1',
      },
    });
  });

  it('never joins a message due within the join margin (a sender may be taking it)', () => {
    const group = { kind: 'cycle' } as const;
    const soon = openMessage({ id: 'soon', sendAt: at('2026-07-01T08:00:01.999Z') });
    const placement = placeNotification({
      now,
      prefs: prefs({ group }),
      notification: yellow,
      open: [soon],
      recentSends: [],
    });
    expect(placement).toEqual({
      create: { hold: 'cycle', sendAt: at('2026-07-01T08:01:00Z'), cycleId: 'c1' },
    });
    const justInTime = { ...soon, sendAt: at('2026-07-01T08:00:02Z') };
    expect(
      placeNotification({
        now,
        prefs: prefs({ group }),
        notification: yellow,
        open: [justInTime],
        recentSends: [],
      }),
    ).toEqual({ join: 'soon' });
  });

  it("'window' joins the open window message, else opens one due in N s", () => {
    const group = { kind: 'window', seconds: 300 } as const;
    const open = [openMessage({ id: 'w', hold: 'window', cycleId: null })];
    expect(
      placeNotification({
        now,
        prefs: prefs({ group }),
        notification: yellow,
        open,
        recentSends: [],
      }),
    ).toEqual({ join: 'w' });
    expect(
      placeNotification({
        now,
        prefs: prefs({ group }),
        notification: yellow,
        open: [],
        recentSends: [],
      }),
    ).toEqual({ create: { hold: 'window', sendAt: at('2026-07-01T08:05:00Z'), cycleId: null } });
  });
});

describe('placeNotification: quiet hours', () => {
  const threeAm = at('2026-07-01T19:00:00Z'); // 03:00 in Shanghai
  const windowEnd = at('2026-07-01T23:00:00Z'); // 07:00 in Shanghai
  const quiet = prefs({ quietHours: NIGHT, group: { kind: 'cycle' } });

  it('holds a notification below the bypass level until the window ends', () => {
    expect(
      placeNotification({
        now: threeAm,
        prefs: quiet,
        notification: yellow,
        open: [],
        recentSends: [],
      }),
    ).toEqual({ create: { hold: 'quiet', sendAt: windowEnd, cycleId: null } });
  });

  it('puts later held notifications into the same quiet message', () => {
    const held = openMessage({ id: 'q', hold: 'quiet', cycleId: null, sendAt: windowEnd });
    expect(
      placeNotification({
        now: threeAm,
        prefs: quiet,
        notification: { ...yellow, cycleId: 'c9' },
        open: [held],
        recentSends: [windowEnd],
      }),
    ).toEqual({ join: 'q' });
  });

  it('sends an urgent one at once and never into the quiet message', () => {
    const held = openMessage({ id: 'q', hold: 'quiet', cycleId: null, sendAt: windowEnd });
    expect(
      placeNotification({
        now: threeAm,
        prefs: quiet,
        notification: { level: '黄色', urgent: true, cycleId: 'c1' },
        open: [held],
        recentSends: [windowEnd],
      }),
    ).toEqual({
      create: { hold: 'cycle', sendAt: at('2026-07-01T19:01:00Z'), cycleId: 'c1' },
    });
  });

  it('does not let a yellow ride along with the red sent at 3 a.m.', () => {
    const red = openMessage({ id: 'red', sendAt: at('2026-07-01T19:00:30Z') });
    expect(
      placeNotification({
        now: threeAm,
        prefs: quiet,
        notification: yellow,
        open: [red],
        recentSends: [red.sendAt],
      }),
    ).toEqual({ create: { hold: 'quiet', sendAt: windowEnd, cycleId: null } });
  });

  it('does not let a held one join a window message that would carry it past the window', () => {
    // An urgent one at 06:50 opened a 30-minute window message, due at 07:20.
    const late = openMessage({
      id: 'w',
      hold: 'window',
      cycleId: null,
      sendAt: at('2026-07-01T23:20:00Z'),
    });
    expect(
      placeNotification({
        now: at('2026-07-01T22:55:00Z'),
        prefs: prefs({ quietHours: NIGHT, group: { kind: 'window', seconds: 1800 } }),
        notification: yellow,
        open: [late],
        recentSends: [late.sendAt],
      }),
    ).toEqual({ create: { hold: 'quiet', sendAt: windowEnd, cycleId: null } });
  });

  it('sends what was detected just before the window just before it, not in the morning', () => {
    const justBefore = at('2026-07-01T13:59:30Z'); // 21:59:30
    expect(
      placeNotification({
        now: justBefore,
        prefs: quiet,
        notification: yellow,
        open: [],
        recentSends: [],
      }),
    ).toEqual({
      create: { hold: 'cycle', sendAt: at('2026-07-01T13:59:59.999Z'), cycleId: 'c1' },
    });
  });
});

describe('placeNotification: maxPerHour', () => {
  const now = at('2026-07-01T08:00:00Z');
  const limited = prefs({ maxPerHour: 2 });
  const full = [at('2026-07-01T07:10:00Z'), at('2026-07-01T07:50:00Z')];

  it('sends at once while the hour has room', () => {
    expect(
      placeNotification({
        now,
        prefs: limited,
        notification: yellow,
        open: [],
        recentSends: full.slice(1),
      }),
    ).toEqual({ create: { hold: null, sendAt: now, cycleId: null } });
  });

  it('waits for the first slot the sliding hour frees', () => {
    expect(
      placeNotification({ now, prefs: limited, notification: yellow, open: [], recentSends: full }),
    ).toEqual({ create: { hold: 'throttle', sendAt: at('2026-07-01T08:10:00Z'), cycleId: null } });
  });

  it('joins an open message due no later than that slot instead', () => {
    const waiting = openMessage({
      id: 't',
      hold: 'throttle',
      cycleId: null,
      sendAt: at('2026-07-01T08:10:00Z'),
    });
    expect(
      placeNotification({
        now,
        prefs: limited,
        notification: yellow,
        open: [waiting],
        recentSends: [...full, waiting.sendAt],
      }),
    ).toEqual({ join: 't' });
  });

  it('holds a slot that falls in the quiet hours until the window ends', () => {
    const evening = at('2026-07-01T13:55:00Z'); // 21:55 in Shanghai
    const sends = [at('2026-07-01T13:10:00Z'), at('2026-07-01T13:50:00Z')];
    expect(
      placeNotification({
        now: evening,
        prefs: prefs({ maxPerHour: 2, quietHours: NIGHT }),
        notification: yellow,
        open: [],
        recentSends: sends,
      }),
    ).toEqual({ create: { hold: 'quiet', sendAt: at('2026-07-01T23:00:00Z'), cycleId: null } });
  });

  it('gives a cycle message no early-release slot it may not use', () => {
    // One send 59.5 min ago: now is busy, now + 60 s is free.
    expect(
      placeNotification({
        now,
        prefs: prefs({ maxPerHour: 1, group: { kind: 'cycle' } }),
        notification: yellow,
        open: [],
        recentSends: [at('2026-07-01T07:00:30Z')],
      }),
    ).toEqual({ create: { hold: 'throttle', sendAt: at('2026-07-01T08:01:00Z'), cycleId: null } });
  });
});

describe('simulate', () => {
  it('shows a night of warnings as the subscriber receives them', () => {
    const chain = (id: string, iso: string, level: '黄色' | '红色', chainId = id) => ({
      id,
      at: at(iso),
      level,
      chainId,
      cycleId: iso,
    });
    const { messages } = simulate(
      [
        chain('yellow', '2026-07-01T18:00:00Z', '黄色'), // 02:00, held
        chain('red', '2026-07-01T19:00:00Z', '红色'), // 03:00, urgent
        chain('red-down', '2026-07-01T20:00:00Z', '黄色', 'red'), // downgrade: still urgent
        chain('yellow-2', '2026-07-01T21:00:00Z', '黄色'), // held with the first
      ],
      prefs({ quietHours: NIGHT, group: { kind: 'cycle' } }),
    );
    expect(messages.map((m) => [m.hold, m.sendAt.toISOString(), m.notificationIds])).toEqual([
      ['quiet', '2026-07-01T23:00:00.000Z', ['yellow', 'yellow-2']],
      ['cycle', '2026-07-01T19:01:00.000Z', ['red']],
      ['cycle', '2026-07-01T20:01:00.000Z', ['red-down']],
    ]);
  });
});
