import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { describeSeedProblem } from '../../src/admin/seed-problems.js';
import { applySeed } from '../../src/admin/seed.js';
import {
  canonicalTimeZone,
  parseScheduleInput,
  quoteValue,
  type SubscriberSchedule,
} from '../../src/admin/seed-schedule.js';
import { validateDocument } from '../../src/admin/seed-validate.js';
import type { Db } from '../../src/db/client.js';
import { createLogger } from '../../src/logger.js';

const NAME = 'Hangzhou duty desk';
const base = { name: NAME, email: 'duty@example.com', locations: ['101210101'] };

/** The printed problem lines of a file whose subscriber[1] carries `fields`. */
function linesFor(fields: Record<string, unknown>): string[] {
  const doc = {
    subscribers: [
      { email: 'first@example.com', locations: ['101010100'] },
      { ...base, ...fields },
    ],
  };
  return validateDocument(doc).problems.map((p) => describeSeedProblem(doc, p));
}

/** The line `qwn seed` prints for a problem written as "<field> <what is wrong>". */
function printed(index: number, who: string, problem: string): string {
  const [field, ...rest] = problem.split(' ');
  return `subscribers[${index}].${field} (${who}): ${rest.join(' ')}`;
}

function scheduleOf(fields: Record<string, unknown>): SubscriberSchedule {
  const result = validateDocument({ subscribers: [{ ...base, ...fields }] });
  expect(result.problems).toEqual([]);
  return result.subscribers[0]!.schedule;
}

describe('seed schedule fields: accepted values', () => {
  it('stores nothing when the fields are absent (defaults stay the channel and place ones)', () => {
    expect(scheduleOf({})).toEqual({
      groupMode: null,
      groupWindowSeconds: null,
      timezone: null,
      quietFrom: null,
      quietTo: null,
      quietBypassLevel: null,
      maxPerHour: null,
    });
  });

  it('reads group, timezone, quiet hours with an English bypass level, and maxPerHour', () => {
    expect(
      scheduleOf({
        group: { windowSeconds: 120 },
        timezone: 'Asia/Urumqi',
        quietHours: { from: '22:00', to: '07:00', bypassLevel: 'Red' },
        maxPerHour: 6,
      }),
    ).toEqual({
      groupMode: 'window',
      groupWindowSeconds: 120,
      timezone: 'Asia/Urumqi',
      quietFrom: '22:00',
      quietTo: '07:00',
      quietBypassLevel: '红色',
      maxPerHour: 6,
    });
    expect(scheduleOf({ group: 'none' }).groupMode).toBe('none');
    expect(scheduleOf({ group: 'cycle' })).toMatchObject({
      groupMode: 'cycle',
      groupWindowSeconds: null,
    });
    expect(scheduleOf({ quietHours: { from: '12:00', to: '13:30' } })).toMatchObject({
      quietFrom: '12:00',
      quietTo: '13:30',
      quietBypassLevel: null,
    });
  });

  it('takes numbers written as text, as YAML reads every scalar', () => {
    expect(scheduleOf({ group: { windowSeconds: '3600' }, maxPerHour: '1000' })).toMatchObject({
      groupWindowSeconds: 3600,
      maxPerHour: 1000,
    });
  });

  it('stores the canonical zone name, whatever the case written', () => {
    expect(scheduleOf({ timezone: 'asia/shanghai' }).timezone).toBe('Asia/Shanghai');
    expect(canonicalTimeZone('UTC')).toBe('UTC');
    expect(canonicalTimeZone('Mars/Olympus')).toBeNull();
    // Intl takes offsets; the database stores zone names only.
    expect(canonicalTimeZone('+08:00')).toBeNull();
  });
});

describe('seed schedule fields: every problem names the subscriber and quotes the value', () => {
  it.each<[string, Record<string, unknown>, string]>([
    [
      'a time out of range',
      { quietHours: { from: '25:00', to: '07:00' } },
      'quietHours.from "25:00" is not a time of day (HH:MM)',
    ],
    [
      'a time without its leading zero',
      { quietHours: { from: '22:00', to: '7:00' } },
      'quietHours.to "7:00" is not a time of day (HH:MM)',
    ],
    [
      'a missing end',
      { quietHours: { from: '22:00' } },
      'quietHours.to is missing (a time of day, HH:MM)',
    ],
    [
      'an empty window',
      { quietHours: { from: '22:00', to: '22:00' } },
      'quietHours.to "22:00" is the same as quietHours.from: the window would be empty',
    ],
    [
      'an unknown bypass level',
      { quietHours: { from: '22:00', to: '07:00', bypassLevel: '紫色' } },
      'quietHours.bypassLevel "紫色" is not a level (白色, 蓝色, 黄色, 橙色, 红色, or white, blue, yellow, orange, red)',
    ],
    [
      'a misspelt quiet-hours field',
      { quietHours: { from: '22:00', to: '07:00', bypass: '红色' } },
      'quietHours.bypass "红色" is not a known field',
    ],
    [
      'quiet hours written as text',
      { quietHours: '22:00-07:00' },
      'quietHours "22:00-07:00" is not {"from": "HH:MM", "to": "HH:MM", "bypassLevel"?: level}',
    ],
    [
      'an unknown grouping',
      { group: 'hourly' },
      'group "hourly" is not "none", "cycle" or {"windowSeconds": N}',
    ],
    [
      'a window too long',
      { group: { windowSeconds: 3601 } },
      'group.windowSeconds 3601 is not a whole number of seconds from 1 to 3600',
    ],
    [
      'a window of no time',
      { group: { windowSeconds: 0 } },
      'group.windowSeconds 0 is not a whole number of seconds from 1 to 3600',
    ],
    [
      'a fractional window',
      { group: { windowSeconds: 1.5 } },
      'group.windowSeconds 1.5 is not a whole number of seconds from 1 to 3600',
    ],
    [
      'a misspelt window field',
      { group: { window: 60, windowSeconds: 60 } },
      'group.window 60 is not a known field',
    ],
    [
      'a window without its length',
      { group: {} },
      'group.windowSeconds is missing (a whole number of seconds from 1 to 3600)',
    ],
    [
      'an unknown time zone',
      { timezone: 'Asia/Hangzhou' },
      'timezone "Asia/Hangzhou" is not an IANA time zone (e.g. "Asia/Shanghai")',
    ],
    [
      'an offset for a time zone',
      { timezone: '+08:00' },
      'timezone "+08:00" is not an IANA time zone (e.g. "Asia/Shanghai")',
    ],
    [
      'a time zone as a number',
      { timezone: 8 },
      'timezone 8 is not an IANA time zone (e.g. "Asia/Shanghai")',
    ],
    [
      'no messages an hour',
      { maxPerHour: 0 },
      'maxPerHour 0 is not a whole number of messages from 1 to 1000',
    ],
    [
      'too many messages an hour',
      { maxPerHour: '5000' },
      'maxPerHour "5000" is not a whole number of messages from 1 to 1000',
    ],
  ])('%s', (_label, fields, problem) => {
    expect(linesFor(fields)).toEqual([printed(1, NAME, problem)]);
  });

  it('shortens a long bad value', () => {
    const long = `Asia/${'x'.repeat(200)}`;
    const [line] = linesFor({ timezone: long });
    expect(line).toBe(
      printed(
        1,
        NAME,
        `timezone "${long.slice(0, 40)}…" is not an IANA time zone (e.g. "Asia/Shanghai")`,
      ),
    );
  });

  it('reports every bad field at once', () => {
    expect(
      linesFor({
        group: 'daily',
        timezone: 'Nowhere',
        quietHours: { from: '24:00', to: '99:99' },
        maxPerHour: -1,
      }),
    ).toEqual([
      printed(1, NAME, 'group "daily" is not "none", "cycle" or {"windowSeconds": N}'),
      printed(1, NAME, 'timezone "Nowhere" is not an IANA time zone (e.g. "Asia/Shanghai")'),
      printed(1, NAME, 'quietHours.from "24:00" is not a time of day (HH:MM)'),
      printed(1, NAME, 'quietHours.to "99:99" is not a time of day (HH:MM)'),
      printed(1, NAME, 'maxPerHour -1 is not a whole number of messages from 1 to 1000'),
    ]);
  });

  it('names a subscriber without a name by its address', () => {
    const doc = { subscribers: [{ email: 'night@example.com', locations: ['1'], maxPerHour: 0 }] };
    const lines = validateDocument(doc).problems.map((p) => describeSeedProblem(doc, p));
    expect(lines).toEqual([
      printed(
        0,
        'night@example.com',
        'maxPerHour 0 is not a whole number of messages from 1 to 1000',
      ),
    ]);
  });

  it('refuses through applySeed without touching the database', async () => {
    const untouchable = new Proxy(
      {},
      {
        get() {
          throw new Error('the database was used although the seed had problems');
        },
      },
    ) as Db;
    const result = await applySeed(
      {
        db: untouchable,
        lookup: { lookupCity: () => Promise.resolve([]) },
        logger: createLogger('silent'),
      },
      { subscribers: [{ ...base, locations: ['101210101'], maxPerHour: 1001 }] },
    );
    // The stub lookup knows no place: that is a second problem, reported with the first.
    expect(result.ok).toBe(false);
    expect(!result.ok && result.problems).toContainEqual({
      index: 0,
      field: 'maxPerHour',
      message: '1001 is not a whole number of messages from 1 to 1000',
    });
  });
});

describe('quoteValue', () => {
  it('never renders more than a short line, whatever the value (property)', () => {
    fc.assert(
      fc.property(fc.anything(), (value) => {
        const quoted = quoteValue(value);
        // At most 40 characters, each escaped to at most 6, the ellipsis and the quotes.
        expect(quoted.length).toBeLessThanOrEqual(41 * 6 + 2);
        expect(quoted).not.toMatch(/[\r\n]/);
      }),
    );
  });

  it('accepts exactly the times of day from 00:00 to 23:59 (property)', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 99 }), fc.integer({ min: 0, max: 99 }), (h, m) => {
        const time = `${String(h).padStart(2, '0')}:${String(m).padStart(2, '0')}`;
        const other = time === '12:00' ? '13:00' : '12:00';
        const parsed = parseScheduleInput({ quietHours: { from: time, to: other } });
        expect(parsed.ok).toBe(h < 24 && m < 60);
      }),
    );
  });
});
