import { sql } from 'drizzle-orm';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applySeed, parseSeedText, SeedError } from '../../src/admin/seed.js';
import { queryRows } from '../../src/db/client.js';
import { createLogger } from '../../src/logger.js';
import { runCheck } from '../../src/pipeline/check.js';
import type { Runtime } from '../../src/runtime/runtime.js';
import { createQWeatherClient, type QWeatherClient } from '../../src/qweather/client.js';
import { v7Warning, type V7WarningRecord } from '../../src/simulator/index.js';
import { startPipelineHarness, type PipelineHarness } from '../support/pipeline.js';

/**
 * Random input generated with fast-check, each property with a fixed seed (printed):
 * seed files — bad input gets a clear message and leaves the database as it was (docs/design.md
 * invariant 6); upstream records — never a crash, never a cancel or expiry from a failure
 * (invariants 3 and 5).
 */

const PLACE = '101210101';
const logger = createLogger('silent');

let h: PipelineHarness;
let client: QWeatherClient;
let runtime: Runtime;

beforeAll(async () => {
  h = await startPipelineHarness();
  client = createQWeatherClient({ apiUrl: h.sim.url, auth: { kind: 'none' }, maxAttempts: 1 });
  runtime = h.runtime();
});
afterAll(async () => {
  await client?.close();
  await h?.close();
});

async function dump(): Promise<string> {
  const tables = await Promise.all(
    ['places ORDER BY id', 'subscribers ORDER BY id', 'subscriptions ORDER BY id'].map((t) =>
      queryRows(h.database.db, sql.raw(`SELECT * FROM ${t}`)),
    ),
  );
  return JSON.stringify(tables);
}

const junk = fc.oneof(
  fc.string(),
  fc.integer(),
  fc.constant(null),
  fc.boolean(),
  fc.array(fc.string(), { maxLength: 3 }),
  fc.dictionary(fc.string({ maxLength: 5 }), fc.string(), { maxKeys: 2 }),
);
/** Mostly right (so that some documents pass), sometimes junk, sometimes missing. */
const maybe = <T>(arb: fc.Arbitrary<T>) =>
  fc.option(fc.oneof({ arbitrary: arb, weight: 12 }, { arbitrary: junk, weight: 1 }), {
    nil: undefined,
    freq: 8,
  });

/** Subscribers that are often almost right: each field valid, junk, or missing. */
const subscriberArb = fc.record(
  {
    name: maybe(fc.string({ maxLength: 20 })),
    email: maybe(fc.constantFrom('a@example.com', 'b@example.org', 'c@example.net', 'x@y')),
    webhook: maybe(
      fc.constantFrom('https://hooks.example.com/q', 'ftp://example.com/', 'http://10.0.0.1/x'),
    ),
    secret: maybe(fc.constantFrom('whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', 'whsec_short', '')),
    lang: maybe(fc.constantFrom('zh', 'en', 'fr')),
    locations: maybe(
      fc.array(
        fc.oneof(
          fc.constantFrom(PLACE, '101010100', '999999999', '杭州', '120.16,30.27', '500,500'),
          fc.record({ query: fc.constantFrom('西湖', '杭州', 'nowhere'), adm: fc.string() }),
          junk,
        ),
        { maxLength: 4 },
      ),
    ),
    minLevel: maybe(fc.constantFrom('黄色', 'orange', 'purple')),
    types: maybe(fc.array(fc.constantFrom('暴雨', '1003', '11B03', ''), { maxLength: 3 })),
    events: maybe(fc.array(fc.constantFrom('new', 'update', 'cancel', 'expired', 'later'))),
  },
  { requiredKeys: [] },
);

/** A subscriber every rule accepts, with random choices inside the rules. */
const validSubscriberArb = fc.record({
  email: fc.integer({ min: 0, max: 50 }).map((n) => `s${n}@example.com`),
  locations: fc.uniqueArray(fc.constantFrom(PLACE, '101010100', '杭州'), {
    minLength: 1,
    maxLength: 2,
  }),
  minLevel: fc.constantFrom('蓝色', '黄色', 'orange'),
  events: fc.subarray(['new', 'update', 'cancel', 'expired'], { minLength: 1 }),
});

describe('random seed files', () => {
  it('bad input is refused with a message naming the field, and changes nothing', async () => {
    const seed = 7301;
    process.stdout.write(`seed ${seed}\n`);
    let refused = 0;
    let applied = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          fc.record({
            subscribers: fc.uniqueArray(validSubscriberArb, {
              minLength: 1,
              maxLength: 3,
              selector: (s) => s.email,
            }),
          }),
          fc.record({
            subscribers: fc.array(fc.oneof(validSubscriberArb, subscriberArb), {
              minLength: 1,
              maxLength: 4,
            }),
          }),
          junk,
        ),
        async (doc) => {
          const before = await dump();
          const result = await applySeed({ db: h.database.db, lookup: client, logger }, doc);
          if (result.ok) {
            applied += 1;
            // Start the next case from the same empty state.
            await h.database.db.execute(sql`TRUNCATE subscriptions, subscribers, places CASCADE`);
            return;
          }
          refused += 1;
          expect(result.problems.length).toBeGreaterThan(0);
          for (const problem of result.problems) {
            expect(problem.message.trim().length).toBeGreaterThan(5);
          }
          expect(await dump()).toBe(before);
        },
      ),
      { seed, numRuns: 120 },
    );
    process.stdout.write(
      `FAULT-REPORT ${JSON.stringify({ fault: 'random seed documents', seed, refused, applied })}\n`,
    );
    expect(refused).toBeGreaterThan(30);
    expect(applied).toBeGreaterThan(0);
  });

  it('random file text either parses or is refused with a position, never anything else', () => {
    const seed = 7302;
    process.stdout.write(`seed ${seed}\n`);
    let refused = 0;
    fc.assert(
      fc.property(
        fc.oneof(fc.string(), fc.json(), fc.stringMatching(/^[{}[\]:,"a-z0-9 \n-]{0,40}$/)),
        fc.constantFrom<'json' | 'yaml'>('json', 'yaml'),
        (text, format) => {
          try {
            parseSeedText(text, format);
          } catch (err) {
            expect(err).toBeInstanceOf(SeedError);
            expect((err as SeedError).reason.length).toBeGreaterThan(3);
            refused += 1;
          }
        },
      ),
      { seed, numRuns: 400 },
    );
    expect(refused).toBeGreaterThan(0);
  });
});

/** Records with an id and a title (served as written) and every other field random. */
const recordArb: fc.Arbitrary<V7WarningRecord> = fc
  .record(
    {
      id: fc.oneof(fc.stringMatching(/^[0-9]{26}$/), fc.string({ maxLength: 30 })),
      title: fc.oneof(fc.string(), fc.constant('杭州市气象台发布暴雨橙色预警')),
      sender: junk,
      pubTime: fc.oneof(fc.constant('2026-07-01T08:00+08:00'), junk),
      startTime: fc.oneof(fc.constant(''), fc.constant('2026-07-01T08:00+08:00'), junk),
      endTime: fc.oneof(
        fc.constant('2099-07-02T08:00+08:00'),
        fc.constant('2001-01-01T00:00Z'),
        junk,
      ),
      status: fc.oneof(fc.constantFrom('active', 'update', 'cancel', '预警中', '取消'), junk),
      level: fc.oneof(fc.constantFrom('黄色', '橙色', 'Red', ''), junk),
      severity: fc.oneof(fc.constantFrom('Minor', 'Extreme'), junk),
      severityColor: fc.oneof(fc.constantFrom('Yellow', 'Purple'), junk),
      type: fc.oneof(fc.constantFrom('1003', '11B03', '暴雨'), junk),
      typeName: junk,
      urgency: junk,
      certainty: junk,
      text: junk,
      related: fc.oneof(fc.constant(''), fc.string({ maxLength: 30 }), junk),
    },
    { requiredKeys: ['id', 'title'] },
  )
  .filter((r) => typeof r.id === 'string' && typeof r.title === 'string');

describe('random upstream records', () => {
  it('never crash a check and never end a tracked warning after one answer', async () => {
    const seed = 7303;
    process.stdout.write(`seed ${seed}\n`);
    await h.addPlace(PLACE, '杭州');
    await h.addEmailSubscriber('random@example.com', [PLACE]);
    const tracked = v7Warning({ locationId: PLACE, seq: 1, typeCode: '1003', level: '橙色' });
    const newCycle = async () => {
      const [row] = await queryRows<{ id: string }>(
        h.database.db,
        sql`INSERT INTO poll_cycles (status) VALUES ('running') RETURNING id`,
      );
      return row!.id;
    };
    h.sim.setWarnings(PLACE, [tracked]);
    const first = await runCheck(runtime.ctx, { cycleId: await newCycle(), placeId: PLACE });
    expect(first.events.new).toBe(1);

    let failed = 0;
    let accepted = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.array(recordArb, { maxLength: 3 }),
        fc.boolean(),
        async (records, keepTracked) => {
          // Seen a moment before the cycle below begins: times are compared to the
          // millisecond, and a cycle begun in the very millisecond of the sighting is no later.
          await h.database.db.execute(sql`
            UPDATE warnings SET misses = 0, last_miss_at = NULL,
              last_seen = now() - interval '1 second'
            WHERE warning_id = ${tracked.id}`);
          h.sim.setWarnings(PLACE, keepTracked ? [tracked, ...records] : records);
          const outcome = await runCheck(runtime.ctx, {
            cycleId: await newCycle(),
            placeId: PLACE,
          });
          if (outcome.fetchOk) accepted += 1;
          else failed += 1;
          if (!outcome.fetchOk) {
            expect(outcome.events).toEqual({
              new: 0,
              update: 0,
              cancel: 0,
              expired: 0,
              resumed: 0,
            });
          }
          const [row] = await queryRows<{ state: string; misses: number }>(
            h.database.db,
            sql`SELECT state, misses FROM warnings WHERE warning_id = ${tracked.id}`,
          );
          // One answer without it is one miss, never an end (EXPIRE_AFTER_MISSES is 2); only a
          // record naming it in `related` could close it, and random ids never do. An answer
          // with a record it could not read is no miss at all (README, promises).
          expect(row!.state).toBe('open');
          const miss = outcome.fetchOk && !keepTracked && outcome.skippedRecords === 0;
          expect(row!.misses).toBe(miss ? 1 : 0);
        },
      ),
      { seed, numRuns: 150 },
    );
    const [events] = await queryRows<{ cancel: number; expired: number }>(
      h.database.db,
      sql`SELECT count(*) FILTER (WHERE type = 'cancel' AND warning_id = ${tracked.id})::int AS cancel,
                 count(*) FILTER (WHERE type = 'expired' AND warning_id = ${tracked.id})::int AS expired
          FROM events`,
    );
    process.stdout.write(
      `FAULT-REPORT ${JSON.stringify({ fault: 'random upstream records', seed, accepted, failed, trackedEnded: events })}\n`,
    );
    expect(events).toEqual({ cancel: 0, expired: 0 });
    expect(accepted).toBeGreaterThan(0);
  });
});
