import { describe, expect, it } from 'vitest';
import { validateDocument } from '../../src/admin/seed-validate.js';
import { decodeEncodedWords } from '../../src/demo/smtp-sink.js';
import { DEMO_PLACES, UNWATCHED_PLACES, buildStoryline } from '../../src/demo/storyline.js';
import { demoSeedDocument } from '../../src/demo/subscribers.js';
import { parseScenario } from '../../src/simulator/index.js';

const NOW = new Date('2026-07-01T08:00:00Z');

interface Record7 {
  id: string;
  status: string;
  level: string;
  typeName: string;
  related: string;
  pubTime: string;
  endTime: string;
}

function recordsAt(step: number, placeId: string): Record7[] {
  const steps = buildStoryline(NOW).scenario.steps;
  return (steps[step]?.warnings?.[placeId] ?? []) as unknown as Record7[];
}

describe('the demo storyline', () => {
  it('is a scenario the simulator accepts, one step per announced step', () => {
    const story = buildStoryline(NOW);
    expect(story.steps).toHaveLength(5);
    expect(parseScenario(story.scenario, { now: NOW, place: () => undefined })).toHaveLength(5);
  });

  it('raises the typhoon at 湛江 from blue to red, each update naming the one before, then cancels it', () => {
    const chain = [0, 1, 2, 3, 4].map((step) => recordsAt(step, DEMO_PLACES.zhanjiang.id)[0]!);
    expect(chain.map((r) => [r.status, r.level, r.typeName])).toEqual([
      ['active', '蓝色', '台风'],
      ['update', '黄色', '台风'],
      ['update', '橙色', '台风'],
      ['update', '红色', '台风'],
      ['cancel', '红色', '台风'],
    ]);
    for (let i = 1; i < chain.length; i += 1) expect(chain[i]!.related).toBe(chain[i - 1]!.id);
  });

  it('updates the 杭州 rainstorm once, then leaves it missing for the rest of the story', () => {
    const [yellow] = recordsAt(0, DEMO_PLACES.hangzhou.id);
    const [orange] = recordsAt(1, DEMO_PLACES.hangzhou.id);
    expect(orange).toMatchObject({ status: 'update', level: '橙色', related: yellow!.id });
    for (const step of [2, 3, 4]) expect(recordsAt(step, DEMO_PLACES.hangzhou.id)).toEqual([]);
  });

  it('keeps warnings at unwatched places in every step, and every end time hours ahead', () => {
    const steps = buildStoryline(NOW).scenario.steps;
    for (const [index] of steps.entries()) {
      for (const place of Object.values(UNWATCHED_PLACES)) {
        expect(recordsAt(index, place.id)).toHaveLength(1);
      }
      for (const records of Object.values(steps[index]!.warnings ?? {})) {
        for (const r of records as unknown as Record7[]) {
          expect(Date.parse(r.endTime)).toBeGreaterThan(NOW.getTime() + 6 * 3_600_000);
          expect(Date.parse(r.pubTime)).toBeLessThanOrEqual(NOW.getTime());
        }
      }
    }
  });
});

describe('the demo subscribers', () => {
  it('are a valid seed document', () => {
    const doc = demoSeedDocument({
      webhookUrl: (path) => `http://127.0.0.1:9/${path.replace(/^\//, '')}`,
      dispatchSecret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
      typhoonDeskSecret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
      quietHours: { from: new Date('2026-07-01T13:59:00Z'), to: new Date('2026-07-01T14:00:20Z') },
    });
    const validated = validateDocument(doc);
    expect(validated.problems).toEqual([]);
    expect(validated.subscribers.map((s) => s.address.channel)).toEqual([
      'email',
      'email',
      'email',
      'webhook',
      'webhook',
    ]);
  });
});

describe('decodeEncodedWords', () => {
  it('decodes base64 and quoted-printable words and joins adjacent ones', () => {
    const b = Buffer.from('台风红色预警', 'utf8').toString('base64');
    expect(decodeEncodedWords(`=?UTF-8?B?${b}?=`)).toBe('台风红色预警');
    expect(decodeEncodedWords('=?utf-8?Q?Cancelled:_=E5=8F=B0?= =?utf-8?Q?=E9=A3=8E?=')).toBe(
      'Cancelled: 台风',
    );
    expect(decodeEncodedWords('plain subject')).toBe('plain subject');
  });
});
