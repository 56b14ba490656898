import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { v7Warning } from '../../src/simulator/index.js';
import { startPipelineHarness, type PipelineHarness } from '../support/pipeline.js';

/**
 * A message's times are in its subscriber's time zone (seed `timezone`, docs/subscribers.md);
 * without one, in the zone of the place the warning is for.
 */

const HANGZHOU = '101210101';

describe("messages: times in the subscriber's own time zone", () => {
  let h: PipelineHarness;
  // Hangzhou 18:00 on the 28th is 11:00 in Berlin (CET, UTC+1) and 05:00 in New York (EST).
  const rain = v7Warning({
    locationId: HANGZHOU,
    seq: 1,
    typeCode: '1003',
    level: '黄色',
    pubTime: new Date('2026-11-28T10:00:00Z'),
    endTime: new Date('2026-11-29T10:00:00Z'),
  });

  beforeAll(async () => {
    h = await startPipelineHarness();
    await h.addPlace(HANGZHOU, '杭州');
    await h.addEmailSubscriber('hangzhou@example.com', [HANGZHOU]);
    const berlin = await h.addEmailSubscriber('berlin@example.com', [HANGZHOU]);
    const newYork = await h.addEmailSubscriber('new-york@example.com', [HANGZHOU]);
    await h.database.db.execute(
      sql`UPDATE subscribers SET timezone = 'Europe/Berlin' WHERE id = ${berlin}`,
    );
    await h.database.db.execute(
      sql`UPDATE subscribers SET timezone = 'America/New_York', lang = 'en' WHERE id = ${newYork}`,
    );
  });
  afterAll(async () => {
    await h?.close();
  });

  it("shows each subscriber the warning's times in their zone, else in the place's", async () => {
    h.sim.setWarnings(HANGZHOU, [rain]);
    const { code } = await h.pollOnce();
    expect(code).toBe(0);
    const textTo = (address: string) => {
      const mail = h.smtp.messages.find((m) => m.envelope.to.includes(address));
      if (!mail) throw new Error(`no mail to ${address}`);
      return mail.parsed.text ?? '';
    };
    expect(textTo('hangzhou@example.com')).toContain('2026-11-28 18:00 (GMT+8)');
    expect(textTo('hangzhou@example.com')).toContain('2026-11-29 18:00 (GMT+8)');
    expect(textTo('berlin@example.com')).toContain('2026-11-28 11:00 (GMT+1)');
    expect(textTo('berlin@example.com')).toContain('2026-11-29 11:00 (GMT+1)');
    expect(textTo('berlin@example.com')).not.toContain('GMT+8');
    expect(textTo('new-york@example.com')).toContain('2026-11-28 05:00 (GMT-5)');
    expect(textTo('new-york@example.com')).not.toContain('GMT+8');
  });
});
