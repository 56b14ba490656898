import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { applySeed, type SeedOptions, type SeedResult } from '../../src/admin/seed.js';
import { queryRows } from '../../src/db/client.js';
import { createLogger } from '../../src/logger.js';
import { createQWeatherClient, type QWeatherClient } from '../../src/qweather/client.js';
import { startSimulator, type Simulator } from '../../src/simulator/index.js';
import { qwnInProcess } from '../support/cli.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';

const logger = createLogger('silent');

let database: TestDatabase;
let simulator: Simulator;
let client: QWeatherClient;
let workdir: string;

beforeAll(async () => {
  [database, simulator] = await Promise.all([createTestDatabase(), startSimulator()]);
  client = createQWeatherClient({ apiUrl: simulator.url, auth: { kind: 'none' }, maxAttempts: 1 });
  workdir = await mkdtemp(join(tmpdir(), 'qwn-seed-schedule-'));
});

afterAll(async () => {
  await client?.close();
  await simulator?.close();
  await database?.drop();
  if (workdir) await rm(workdir, { recursive: true, force: true });
});

beforeEach(async () => {
  await database.db.execute(sql`TRUNCATE subscriptions, subscribers, places CASCADE`);
});

const seed = (doc: unknown, options?: SeedOptions) =>
  applySeed({ db: database.db, lookup: client, logger }, doc, options);

function expectOk(result: SeedResult): Extract<SeedResult, { ok: true }> {
  if (!result.ok) throw new Error(`seed failed: ${JSON.stringify(result.problems)}`);
  return result;
}

interface ScheduleRow {
  email: string | null;
  group_mode: string | null;
  group_window_seconds: number | null;
  timezone: string | null;
  quiet_from: string | null;
  quiet_to: string | null;
  quiet_bypass_level: string | null;
  max_per_hour: number | null;
  /** Postgres's text form: raw queries are not parsed by drizzle. */
  unsubscribed_at: string | null;
}

async function rowOf(email: string): Promise<ScheduleRow> {
  const [row] = await queryRows<ScheduleRow>(
    database.db,
    sql`SELECT email, group_mode, group_window_seconds, timezone, quiet_from, quiet_to,
               quiet_bypass_level, max_per_hour, unsubscribed_at
          FROM subscribers WHERE email = ${email}`,
  );
  if (!row) throw new Error(`no subscriber ${email}`);
  return row;
}

async function allSubscribers() {
  return queryRows(database.db, sql`SELECT * FROM subscribers ORDER BY id`);
}

async function unsubscribe(email: string, at = '2026-11-20T08:00:00Z'): Promise<void> {
  await database.db.execute(
    sql`UPDATE subscribers SET unsubscribed_at = ${at}::timestamptz WHERE email = ${email}`,
  );
}

const DUTY = {
  name: 'Hangzhou duty desk',
  email: 'duty@example.com',
  locations: ['101210101'],
  group: { windowSeconds: 300 },
  timezone: 'Asia/Shanghai',
  quietHours: { from: '22:00', to: '07:00', bypassLevel: '红色' },
  maxPerHour: 6,
};
const NIGHT = { name: 'Night desk', email: 'night@example.com', locations: ['101010100'] };

describe('seed schedule fields in Postgres', () => {
  it('stores the fields, leaves absent ones null, and re-seeding changes nothing', async () => {
    expectOk(await seed({ subscribers: [DUTY, NIGHT] }));
    expect(await rowOf('duty@example.com')).toMatchObject({
      group_mode: 'window',
      group_window_seconds: 300,
      timezone: 'Asia/Shanghai',
      quiet_from: '22:00',
      quiet_to: '07:00',
      quiet_bypass_level: '红色',
      max_per_hour: 6,
      unsubscribed_at: null,
    });
    // Absent: null, so the time zone follows the first place and grouping the channel.
    expect(await rowOf('night@example.com')).toMatchObject({
      group_mode: null,
      group_window_seconds: null,
      timezone: null,
      quiet_from: null,
      quiet_to: null,
      quiet_bypass_level: null,
      max_per_hour: null,
    });

    const before = await allSubscribers();
    const again = expectOk(await seed({ subscribers: [DUTY, NIGHT] }));
    expect(again).toMatchObject({ created: 0, updated: 0, unchanged: 2 });
    expect(await allSubscribers()).toEqual(before);
  });

  it('updates a changed field in place and clears a removed one', async () => {
    expectOk(await seed({ subscribers: [DUTY] }));
    const changed = { ...DUTY, group: 'cycle', quietHours: { from: '23:30', to: '06:00' } };
    const { maxPerHour: _dropped, ...withoutRate } = changed;
    expect(expectOk(await seed({ subscribers: [withoutRate] }))).toMatchObject({ updated: 1 });
    expect(await rowOf('duty@example.com')).toMatchObject({
      group_mode: 'cycle',
      group_window_seconds: null,
      timezone: 'Asia/Shanghai',
      quiet_from: '23:30',
      quiet_to: '06:00',
      quiet_bypass_level: null,
      max_per_hour: null,
    });

    const { group: _g, timezone: _t, quietHours: _q, ...bare } = withoutRate;
    expectOk(await seed({ subscribers: [bare] }));
    expect(await rowOf('duty@example.com')).toMatchObject({
      group_mode: null,
      timezone: null,
      quiet_from: null,
      quiet_to: null,
    });
  });
});

describe('seed and unsubscribed subscribers', () => {
  it('reports an unsubscribed subscriber and never clears it, even when its entry changes', async () => {
    expectOk(await seed({ subscribers: [DUTY, NIGHT] }));
    await unsubscribe('duty@example.com');

    const same = expectOk(await seed({ subscribers: [DUTY, NIGHT] }));
    expect(same.unsubscribed).toEqual([
      {
        index: 0,
        name: 'Hangzhou duty desk',
        email: 'duty@example.com',
        since: new Date('2026-11-20T08:00:00Z'),
      },
    ]);
    expect(same).toMatchObject({ unchanged: 2, resubscribed: [] });

    const changed = expectOk(
      await seed({ subscribers: [{ ...DUTY, name: 'Renamed desk', maxPerHour: 2 }, NIGHT] }),
    );
    expect(changed).toMatchObject({ updated: 1 });
    expect(changed.unsubscribed.map((s) => [s.index, s.name])).toEqual([[0, 'Renamed desk']]);
    const row = await rowOf('duty@example.com');
    expect(row.max_per_hour).toBe(2);
    expect(new Date(row.unsubscribed_at!).toISOString()).toBe('2026-11-20T08:00:00.000Z');
  });

  it('--resubscribe clears the unsubscribe on purpose, whatever the case of the address', async () => {
    expectOk(await seed({ subscribers: [DUTY, NIGHT] }));
    await unsubscribe('duty@example.com');

    const dry = expectOk(
      await seed(
        { subscribers: [DUTY, NIGHT] },
        { dryRun: true, resubscribe: ['DUTY@example.com'] },
      ),
    );
    expect(dry.resubscribed).toEqual([{ email: 'duty@example.com', outcome: 'resubscribed' }]);
    expect((await rowOf('duty@example.com')).unsubscribed_at).not.toBeNull();

    const result = expectOk(
      await seed(
        { subscribers: [DUTY, NIGHT] },
        { resubscribe: ['DUTY@example.com', 'night@example.com'] },
      ),
    );
    expect(result.resubscribed).toEqual([
      { email: 'duty@example.com', outcome: 'resubscribed' },
      { email: 'night@example.com', outcome: 'was-subscribed' },
    ]);
    expect(result.unsubscribed).toEqual([]);
    expect((await rowOf('duty@example.com')).unsubscribed_at).toBeNull();
  });

  it('refuses an unknown --resubscribe address and writes nothing', async () => {
    expectOk(await seed({ subscribers: [DUTY] }));
    await unsubscribe('duty@example.com');
    const before = await allSubscribers();
    const result = await seed(
      { subscribers: [DUTY, NIGHT] },
      { resubscribe: ['duty@example.com', 'nobody@example.com'] },
    );
    expect(result).toEqual({
      ok: false,
      problems: [
        {
          index: null,
          field: '--resubscribe',
          message:
            '"nobody@example.com" is no email subscriber (not in the file, not in the database)',
        },
      ],
    });
    // Neither the resubscribe nor the new subscriber of the file was written.
    expect(await allSubscribers()).toEqual(before);
  });
});

describe('qwn seed --resubscribe', () => {
  function qwn(args: string[]) {
    // Only the settings given: nothing of this process's environment.
    return qwnInProcess(['seed', ...args], {
      unset: /./,
      env: {
        DATABASE_URL: database.url,
        QWEATHER_API_URL: simulator.url,
        LOG_LEVEL: 'silent',
      },
    });
  }

  it('reports the unsubscribed, resubscribes on request and refuses unknown addresses', async () => {
    const path = join(workdir, 'desks.json');
    await writeFile(path, JSON.stringify({ subscribers: [DUTY, NIGHT] }));
    expect((await qwn([path])).code).toBe(0);
    await unsubscribe('duty@example.com');

    const reported = await qwn([path]);
    expect(reported).toMatchObject({ code: 0, stderr: '' });
    expect(reported.stdout.trim().split('\n')).toEqual([
      'seeded: 0 created, 0 updated, 2 unchanged, 0 subscriptions removed',
      `subscribers[0] "Hangzhou duty desk" <duty@example.com> unsubscribed at 2026-11-20 08:00:00+00:00: left unsubscribed (qwn seed ${path} --resubscribe duty@example.com undoes it)`,
    ]);
    expect((await rowOf('duty@example.com')).unsubscribed_at).not.toBeNull();

    const unknown = await qwn([path, '--resubscribe', 'nobody@example.com']);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr.trim().split('\n')).toEqual([
      '--resubscribe: "nobody@example.com" is no email subscriber (not in the file, not in the database)',
      `1 problem in ${path}; nothing written`,
    ]);
    expect((await rowOf('duty@example.com')).unsubscribed_at).not.toBeNull();

    const back = await qwn([path, '--resubscribe', 'duty@example.com']);
    expect(back).toMatchObject({ code: 0, stderr: '' });
    expect(back.stdout.trim().split('\n')).toEqual([
      'seeded: 0 created, 0 updated, 2 unchanged, 0 subscriptions removed',
      'resubscribed duty@example.com: emails are sent to it again',
    ]);
    expect((await rowOf('duty@example.com')).unsubscribed_at).toBeNull();
  });

  it('prints a bad schedule field with the subscriber and the value', async () => {
    const path = join(workdir, 'bad.yaml');
    await writeFile(
      path,
      [
        'subscribers:',
        '  - name: Hangzhou duty desk',
        '    email: duty@example.com',
        '    locations: ["101210101"]',
        '    quietHours: {from: "25:00", to: "07:00"}',
        '    maxPerHour: 6',
        '',
      ].join('\n'),
    );
    const result = await qwn([path]);
    expect(result.code).toBe(1);
    expect(result.stderr.trim().split('\n')).toEqual([
      'subscribers[0].quietHours.from (Hangzhou duty desk): "25:00" is not a time of day (HH:MM)',
      `1 problem in ${path}; nothing written`,
    ]);
    expect(await allSubscribers()).toEqual([]);
  });
});
