import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { applySeed, type SeedResult } from '../../src/admin/seed.js';
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
  workdir = await mkdtemp(join(tmpdir(), 'qwn-seed-'));
});

afterAll(async () => {
  await client?.close();
  await simulator?.close();
  await database?.drop();
  if (workdir) await rm(workdir, { recursive: true, force: true });
});

beforeEach(async () => {
  await database.db.execute(sql`TRUNCATE subscriptions, subscribers, places CASCADE`);
  simulator.clearFaults();
});

const seed = (doc: unknown, options?: { dryRun?: boolean }) =>
  applySeed({ db: database.db, lookup: client, logger }, doc, options);

function expectOk(result: SeedResult): Extract<SeedResult, { ok: true }> {
  if (!result.ok) throw new Error(`seed failed: ${JSON.stringify(result.problems)}`);
  return result;
}

/** Every row of the three tables seeding writes, in a stable order, every column included. */
async function dump() {
  return {
    places: await queryRows(database.db, sql`SELECT * FROM places ORDER BY id`),
    subscribers: await queryRows(database.db, sql`SELECT * FROM subscribers ORDER BY id`),
    subscriptions: await queryRows(
      database.db,
      sql`SELECT * FROM subscriptions ORDER BY subscriber_id, place_id`,
    ),
  };
}

async function counts() {
  const [row] = await queryRows<{ places: number; subscribers: number; subscriptions: number }>(
    database.db,
    sql`SELECT (SELECT count(*)::int FROM places) AS places,
               (SELECT count(*)::int FROM subscribers) AS subscribers,
               (SELECT count(*)::int FROM subscriptions) AS subscriptions`,
  );
  return row;
}

async function subscriptionsOf(address: string) {
  return queryRows<{
    subscriber_id: string;
    place_id: string;
    min_level: string | null;
    types: string[] | null;
    events: string[] | null;
  }>(
    database.db,
    sql`SELECT s.subscriber_id, s.place_id, s.min_level, s.types, s.events
          FROM subscriptions s JOIN subscribers u ON u.id = s.subscriber_id
         WHERE u.email = ${address} OR u.webhook_url = ${address}
         ORDER BY s.place_id`,
  );
}

const EXAMPLE = {
  subscribers: [
    {
      name: 'Hangzhou duty desk',
      email: 'duty@example.com',
      lang: 'zh',
      locations: ['101210101', { query: '西湖', adm: '杭州' }, '120.16,30.27'],
      minLevel: '黄色',
      types: ['暴雨', '台风'],
      events: ['new', 'update', 'cancel', 'expired'],
    },
    {
      name: 'Dispatch system',
      webhook: 'https://hooks.example.com/qweather',
      secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
      locations: ['101010100'],
    },
  ],
};

describe('applySeed against Postgres and the simulator', () => {
  it('creates exactly the rows the file describes', async () => {
    const result = expectOk(await seed(EXAMPLE));
    expect(result).toMatchObject({ created: 2, updated: 0, unchanged: 0, subscriptionsRemoved: 0 });
    expect(result.generatedSecrets).toEqual([]);

    const state = await dump();
    expect(state.places).toEqual([
      expect.objectContaining({
        id: '101010100',
        name: '北京',
        lat: 39.905,
        lon: 116.4053,
        tz: 'Asia/Shanghai',
        adm1: '北京市',
        adm2: '北京市',
        country: '中国',
      }),
      expect.objectContaining({ id: '101210101', name: '杭州', adm1: '浙江省', adm2: '杭州市' }),
      // 西湖 named with adm and the coordinates beside it are one place, subscribed once.
      expect.objectContaining({ id: '101210113', name: '西湖', lat: 30.2729, lon: 120.1474 }),
    ]);
    expect(state.subscribers).toHaveLength(2);
    expect(state.subscribers).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          name: 'Hangzhou duty desk',
          email: 'duty@example.com',
          webhook_url: null,
          webhook_secret: null,
          lang: 'zh',
          active: true,
        }),
        expect.objectContaining({
          name: 'Dispatch system',
          email: null,
          webhook_url: 'https://hooks.example.com/qweather',
          webhook_secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
          lang: 'zh',
        }),
      ]),
    );
    expect(await subscriptionsOf('duty@example.com')).toEqual([
      expect.objectContaining({
        place_id: '101210101',
        min_level: '黄色',
        types: ['1003', '1001'],
        events: ['new', 'update', 'cancel', 'expired'],
      }),
      expect.objectContaining({ place_id: '101210113', min_level: '黄色' }),
    ]);
    expect(await subscriptionsOf('https://hooks.example.com/qweather')).toEqual([
      expect.objectContaining({
        place_id: '101010100',
        min_level: null,
        types: null,
        events: null,
      }),
    ]);
  });

  it('writes nothing when one entry among good ones is bad, and lists every problem', async () => {
    expectOk(await seed(EXAMPLE));
    const before = await dump();
    const result = await seed({
      subscribers: [
        ...EXAMPLE.subscribers,
        { email: 'new@example.com', locations: ['广州'] },
        { email: 'ambiguous@example.com', locations: ['深圳', '朝阳'], minLevel: 'purple' },
        { webhook: 'https://user:pw@hooks.example.com/x', locations: ['nowhere-at-all'] },
      ],
    });
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.problems).toEqual([
      { index: 3, field: 'minLevel', message: expect.stringMatching(/must be one of/) as string },
      {
        index: 3,
        field: 'locations[1]',
        message: '朝阳 matches 2 places (朝阳, 北京 / 朝阳, 辽宁): add adm',
      },
      { index: 4, field: 'webhook', message: expect.stringMatching(/credentials/) as string },
      { index: 4, field: 'locations[0]', message: 'nowhere-at-all matches no place' },
    ]);
    expect(await dump()).toEqual(before);
  });

  it('changes nothing when the same file is seeded twice, not even updated_at', async () => {
    expectOk(await seed(EXAMPLE));
    const first = await dump();
    const again = expectOk(await seed(EXAMPLE));
    expect(again).toMatchObject({ created: 0, updated: 0, unchanged: 2, subscriptionsRemoved: 0 });
    expect(await dump()).toEqual(first);
  });

  it('updates a changed subscriber in place and removes the subscriptions it dropped', async () => {
    expectOk(await seed(EXAMPLE));
    const [before] = await subscriptionsOf('duty@example.com');
    const other = await queryRows(
      database.db,
      sql`SELECT * FROM subscribers WHERE webhook_url = 'https://hooks.example.com/qweather'`,
    );
    const [duty, dispatch] = EXAMPLE.subscribers;
    const changed = {
      subscribers: [
        {
          ...duty,
          name: 'Hangzhou night desk',
          lang: 'en',
          locations: ['101210101', '宁波'],
          minLevel: 'orange',
          types: ['暴雨'],
        },
        dispatch,
      ],
    };
    const result = expectOk(await seed(changed));
    expect(result).toMatchObject({ created: 0, updated: 1, unchanged: 1, subscriptionsRemoved: 1 });

    const after = await subscriptionsOf('duty@example.com');
    expect(after).toEqual([
      expect.objectContaining({ place_id: '101210101', min_level: '橙色', types: ['1003'] }),
      expect.objectContaining({ place_id: '101210401', min_level: '橙色', types: ['1003'] }),
    ]);
    expect(after.every((s) => s.subscriber_id === before?.subscriber_id)).toBe(true);
    const [updated] = await queryRows<{ name: string; lang: string }>(
      database.db,
      sql`SELECT name, lang FROM subscribers WHERE email = 'duty@example.com'`,
    );
    expect(updated).toEqual({ name: 'Hangzhou night desk', lang: 'en' });
    // The subscriber not changed in the file is left exactly as it was.
    expect(
      await queryRows(
        database.db,
        sql`SELECT * FROM subscribers WHERE webhook_url = 'https://hooks.example.com/qweather'`,
      ),
    ).toEqual(other);
    // A place no longer subscribed stays: warnings and deliveries may still refer to it.
    expect((await counts())?.places).toBe(4);
  });

  it('refuses an address that names more than one mailbox, a name that breaks a line, and an unknown type (README, promises)', async () => {
    const before = await dump();
    const bad = (field: Record<string, unknown>) => ({
      name: 'Desk',
      email: 'desk@example.com',
      locations: ['101210101'],
      ...field,
    });
    const result = await seed({
      subscribers: [
        bad({ email: 'victim@example.com,attacker@evil.example' }),
        bad({ email: 'victim@example.com;attacker@evil.example' }),
        bad({ email: 'victim@example.com>,<attacker@evil.example' }),
        bad({ email: '"victim"@example.com' }),
        bad({ name: 'Desk\r\nBcc: attacker@evil.example', email: 'a@example.com' }),
        bad({ email: 'b@example.com', types: ['Typhoon', 'typhoon', '台风风'] }),
      ],
    });
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.problems.map((p) => `${p.index} ${p.field}`)).toEqual([
      '0 email',
      '1 email',
      '2 email',
      '3 email',
      '4 name',
      '5 types[2]',
    ]);
    expect(await dump()).toEqual(before);
  });

  it('takes an address in any letter case for the same mailbox, and keeps an unsubscribe', async () => {
    expectOk(
      await seed({ subscribers: [{ email: 'victim@example.com', locations: ['101210101'] }] }),
    );
    await database.db.execute(
      sql`UPDATE subscribers SET unsubscribed_at = now() WHERE email = 'victim@example.com'`,
    );
    const again = expectOk(
      await seed({ subscribers: [{ email: 'Victim@Example.COM', locations: ['101210101'] }] }),
    );
    expect(again.created).toBe(0);
    expect(again.unsubscribed.map((u) => u.email)).toEqual(['victim@example.com']);
    const rows = await queryRows<{ email: string; unsubscribed: boolean }>(
      database.db,
      sql`SELECT email, unsubscribed_at IS NOT NULL AS unsubscribed FROM subscribers
          WHERE lower(email) = 'victim@example.com'`,
    );
    expect(rows).toEqual([{ email: 'victim@example.com', unsubscribed: true }]);
    // The database itself refuses a second row for the mailbox.
    await expect(
      database.db.execute(sql`INSERT INTO subscribers (email) VALUES ('VICTIM@example.com')`),
    ).rejects.toThrow();
  });

  it('looks up the English names of the places English subscribers watch, and keeps them', async () => {
    expectOk(
      await seed({
        subscribers: [{ email: 'en-desk@example.com', lang: 'en', locations: ['101280101'] }],
      }),
    );
    const named = () =>
      queryRows<{ name: string; name_en: string | null }>(
        database.db,
        sql`SELECT name, name_en FROM places WHERE id = '101280101'`,
      );
    expect(await named()).toEqual([{ name: '广州', name_en: 'Guangzhou' }]);
    // A Chinese subscriber's seed of the same place keeps the English name.
    expectOk(
      await seed({ subscribers: [{ email: 'zh-desk@example.com', locations: ['101280101'] }] }),
    );
    expect(await named()).toEqual([{ name: '广州', name_en: 'Guangzhou' }]);
  });

  it('leaves subscribers that are not in the file untouched', async () => {
    expectOk(await seed(EXAMPLE));
    const before = await dump();
    const result = expectOk(await seed({ subscribers: [EXAMPLE.subscribers[0]] }));
    expect(result).toMatchObject({ created: 0, updated: 0, unchanged: 1 });
    expect(await dump()).toEqual(before);
  });

  it('needs adm for 朝阳, and resolves it with adm 辽宁', async () => {
    const without = await seed({ subscribers: [{ email: 'cy@example.com', locations: ['朝阳'] }] });
    expect(without).toEqual({
      ok: false,
      problems: [
        {
          index: 0,
          field: 'locations[0]',
          message: '朝阳 matches 2 places (朝阳, 北京 / 朝阳, 辽宁): add adm',
        },
      ],
    });
    expect(await counts()).toEqual({ places: 0, subscribers: 0, subscriptions: 0 });

    expectOk(
      await seed({
        subscribers: [{ email: 'cy@example.com', locations: [{ query: '朝阳', adm: '辽宁' }] }],
      }),
    );
    expect(await subscriptionsOf('cy@example.com')).toEqual([
      expect.objectContaining({ place_id: '101071201' }),
    ]);
  });

  it('resolves coordinates to the Location ID of the nearest place', async () => {
    expectOk(
      await seed({ subscribers: [{ email: 'zh@example.com', locations: ['113.58,22.27'] }] }),
    );
    expect(await subscriptionsOf('zh@example.com')).toEqual([
      expect.objectContaining({ place_id: '101280701' }),
    ]);
  });

  it('generates a secret for a new webhook once and keeps it on re-seed', async () => {
    const doc = {
      subscribers: [{ webhook: 'https://hooks.example.com/new', locations: ['上海'] }],
    };
    const first = expectOk(await seed(doc));
    expect(first.generatedSecrets).toHaveLength(1);
    const generated = first.generatedSecrets[0];
    expect(generated?.subscriber).toBe('https://hooks.example.com/new');
    expect(generated?.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);

    const second = expectOk(await seed(doc));
    expect(second.generatedSecrets).toEqual([]);
    expect(second.unchanged).toBe(1);
    const [row] = await queryRows<{ webhook_secret: string }>(
      database.db,
      sql`SELECT webhook_secret FROM subscribers WHERE webhook_url = 'https://hooks.example.com/new'`,
    );
    expect(row?.webhook_secret).toBe(generated?.secret);
  });

  it('reports an upstream failure during resolution as a problem and writes nothing', async () => {
    simulator.addFault({ kind: 'code', code: '500', operation: 'cityLookup', location: '广州' });
    const result = await seed({
      subscribers: [
        { email: 'a@example.com', locations: ['北京'] },
        { email: 'b@example.com', locations: ['广州'] },
      ],
    });
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.problems).toHaveLength(1);
    expect(result.problems[0]).toMatchObject({ index: 1, field: 'locations[0]' });
    expect(result.problems[0]?.message).toMatch(/^广州: city lookup failed: /);
    expect(await counts()).toEqual({ places: 0, subscribers: 0, subscriptions: 0 });
  });

  it('validates and resolves on a dry run without writing', async () => {
    const result = expectOk(await seed(EXAMPLE, { dryRun: true }));
    expect(result).toMatchObject({ created: 2, updated: 0, unchanged: 0 });
    expect(await counts()).toEqual({ places: 0, subscribers: 0, subscriptions: 0 });
  });
});

describe('qwn seed <file>', () => {
  function qwn(args: string[], env: Record<string, string> = {}) {
    // Only the settings given: nothing of this process's environment.
    return qwnInProcess(['seed', ...args], {
      unset: /./,
      env: {
        DATABASE_URL: database.url,
        QWEATHER_API_URL: simulator.url,
        LOG_LEVEL: 'silent',
        ...env,
      },
    });
  }

  async function file(name: string, content: string) {
    const path = join(workdir, name);
    await writeFile(path, content);
    return path;
  }

  it('applies the example files and prints the counts', async () => {
    const json = await qwn(['examples/seed.json']);
    expect(json).toMatchObject({ code: 0, stderr: '' });
    expect(json.stdout).toBe(
      'seeded: 2 created, 0 updated, 0 unchanged, 0 subscriptions removed\n',
    );

    const yaml = await qwn(['examples/seed.yaml']);
    expect(yaml.code).toBe(0);
    const lines = yaml.stdout.trim().split('\n');
    expect(lines[0]).toBe('seeded: 2 created, 0 updated, 0 unchanged, 0 subscriptions removed');
    const secretLine = lines.find((l) => l.startsWith('generated secret for '));
    expect(secretLine).toMatch(
      /^generated secret for https:\/\/hooks\.example\.com\/qweather\/beijing: whsec_\S+$/,
    );
    const secret = secretLine?.split(': ')[1];

    // The second run shows no secret: it was printed once, and it is kept.
    const again = await qwn(['examples/seed.yaml']);
    expect(again).toMatchObject({ code: 0, stderr: '' });
    expect(again.stdout).toBe(
      'seeded: 0 created, 0 updated, 2 unchanged, 0 subscriptions removed\n',
    );
    const [row] = await queryRows<{ webhook_secret: string }>(
      database.db,
      sql`SELECT webhook_secret FROM subscribers WHERE webhook_url = 'https://hooks.example.com/qweather/beijing'`,
    );
    expect(row?.webhook_secret).toBe(secret);
    expect(await counts()).toEqual({ places: 8, subscribers: 4, subscriptions: 9 });
  });

  it('prints one line per problem, writes nothing and exits 1', async () => {
    const path = await file(
      'bad.json',
      JSON.stringify({
        subscribers: [
          { email: 'ok@example.com', locations: ['杭州'] },
          { email: 'x@example.com', locations: ['101210101'] },
          { email: 'cy@example.com', locations: ['朝阳'], lang: 'fr' },
        ],
      }),
    );
    const result = await qwn([path]);
    expect(result.code).toBe(1);
    expect(result.stdout).toBe('');
    expect(result.stderr.trim().split('\n')).toEqual([
      'subscribers[2].lang (cy@example.com): must be "zh" or "en"; got "fr"',
      'subscribers[2].locations[0] (cy@example.com): 朝阳 matches 2 places (朝阳, 北京 / 朝阳, 辽宁): add adm',
      `2 problems in ${path}; nothing written`,
    ]);
    expect(await counts()).toEqual({ places: 0, subscribers: 0, subscriptions: 0 });
  });

  it('points at the line of a YAML syntax error', async () => {
    const path = await file(
      'broken.yaml',
      'subscribers:\n  - email: a@example.com\n    email: b@example.com\n',
    );
    const result = await qwn([path]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`${path}:3:5: invalid YAML: Map keys must be unique`);
  });

  it('validates without writing on --dry-run', async () => {
    const result = await qwn(['--dry-run', 'examples/seed.json']);
    expect(result).toMatchObject({ code: 0, stderr: '' });
    expect(result.stdout).toBe(
      'dry run (nothing written): would have 2 created, 0 updated, 0 unchanged, 0 subscriptions removed\n',
    );
    expect(await counts()).toEqual({ places: 0, subscribers: 0, subscriptions: 0 });
  });

  it('refuses a file name it cannot tell the format of, and a missing configuration', async () => {
    const txt = await qwn(['seed.txt']);
    expect(txt.code).toBe(2);
    expect(txt.stderr).toMatch(/\.json, \.yaml or \.yml/);

    const noApi = await qwn(['examples/seed.json'], { QWEATHER_API_URL: '' });
    expect(noApi.code).toBe(2);
    expect(noApi.stderr).toMatch(/QWEATHER_API_URL is not set/);
  });
});

describe('chat-robot subscribers', () => {
  const WECOM = 'https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=3f2a7c1e-9b8d-4e6f-a5c4';
  const DING = 'https://oapi.dingtalk.com/robot/send?access_token=8c1d5e2b9a7f3e6d4c0b';
  const LARK = 'https://open.larksuite.com/open-apis/bot/v2/hook/0a9b8c7d-6e5f';
  const ROBOTS = {
    subscribers: [
      { name: '杭州值班群', wecom: WECOM, locations: ['101210101'] },
      { name: '应急钉钉群', dingtalk: DING, secret: 'SECabc123', locations: ['101210101'] },
      { name: 'Lark desk', feishu: LARK, secret: 'lark-secret', locations: ['101210101'] },
    ],
  };

  it('writes one row per robot, and seeding the same file again changes nothing', async () => {
    expect(expectOk(await seed(ROBOTS))).toMatchObject({ created: 3, generatedSecrets: [] });
    const rows = await queryRows<{
      name: string;
      robot_kind: string;
      robot_url: string;
      robot_secret: string | null;
      email: string | null;
      webhook_url: string | null;
      group_mode: string | null;
    }>(
      database.db,
      sql`SELECT name, robot_kind, robot_url, robot_secret, email, webhook_url, group_mode
          FROM subscribers ORDER BY name`,
    );
    expect(rows).toEqual([
      expect.objectContaining({ name: 'Lark desk', robot_kind: 'feishu', robot_url: LARK }),
      expect.objectContaining({
        name: '应急钉钉群',
        robot_kind: 'dingtalk',
        robot_secret: 'SECabc123',
      }),
      expect.objectContaining({ name: '杭州值班群', robot_kind: 'wecom', robot_secret: null }),
    ]);
    // No address but the robot's; grouping left to the channel's default ('cycle').
    expect(rows.every((r) => r.email === null && r.webhook_url === null)).toBe(true);
    expect(rows.every((r) => r.group_mode === null)).toBe(true);
    const first = await dump();
    expect(expectOk(await seed(ROBOTS))).toMatchObject({ created: 0, updated: 0, unchanged: 3 });
    expect(await dump()).toEqual(first);
  });

  it('updates a robot in place when its secret changes or goes', async () => {
    expectOk(await seed(ROBOTS));
    const [before] = await queryRows<{ id: string }>(
      database.db,
      sql`SELECT id FROM subscribers WHERE robot_url = ${DING}`,
    );
    const [wecom, ding, lark] = ROBOTS.subscribers;
    const { secret: _dropped, ...unsigned } = lark!;
    const changed = { subscribers: [wecom, { ...ding, secret: 'SECnew456' }, unsigned] };
    expect(expectOk(await seed(changed))).toMatchObject({ created: 0, updated: 2, unchanged: 1 });
    const after = await queryRows<{ id: string; robot_url: string; robot_secret: string | null }>(
      database.db,
      sql`SELECT id, robot_url, robot_secret FROM subscribers WHERE robot_url IN (${DING}, ${LARK})
          ORDER BY robot_kind`,
    );
    expect(after).toEqual([
      { id: before!.id, robot_url: DING, robot_secret: 'SECnew456' },
      expect.objectContaining({ robot_url: LARK, robot_secret: null }),
    ]);
  });

  it('is refused by the database with two addresses, a bad kind or a WeCom secret', async () => {
    const insert = (values: ReturnType<typeof sql>) =>
      database.db.execute(sql`INSERT INTO subscribers (name, email, robot_kind, robot_url,
        robot_secret) VALUES ${values}`);
    await expect(insert(sql`('x', 'a@example.com', 'wecom', ${WECOM}, NULL)`)).rejects.toThrow();
    await expect(insert(sql`('x', NULL, 'slack', ${WECOM}, NULL)`)).rejects.toThrow();
    await expect(insert(sql`('x', NULL, NULL, ${WECOM}, NULL)`)).rejects.toThrow();
    await expect(insert(sql`('x', NULL, 'wecom', ${WECOM}, 'SECx')`)).rejects.toThrow();
    await expect(insert(sql`('x', NULL, 'wecom', 'not a url', NULL)`)).rejects.toThrow();
    await insert(sql`('x', NULL, 'wecom', ${WECOM}, NULL)`);
    await expect(insert(sql`('y', NULL, 'wecom', ${WECOM}, NULL)`)).rejects.toThrow();
  });
});

describe('a seed beyond one statement’s 65,535 parameters', () => {
  it('writes 70,000 subscribers, and seeding the same file again changes nothing', async () => {
    // Reading 70,000 entries holds the event loop for seconds on a busy machine, and the
    // simulator may close the keep-alive connection meanwhile: the lookups retry as the
    // product's client does (the file's other tests make one attempt, to see faults).
    const lookup = createQWeatherClient({ apiUrl: simulator.url, auth: { kind: 'none' } });
    const seed = (doc: unknown) => applySeed({ db: database.db, lookup, logger }, doc);
    const places = ['101210101', '101010100', '101280101'];
    const doc = {
      subscribers: Array.from({ length: 70_000 }, (_, i) =>
        i % 2 === 0
          ? { email: `desk${i}@example.com`, locations: [places[i % 3]!], minLevel: '黄色' }
          : {
              webhook: `https://hooks.example.com/q/${i}`,
              secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
              locations: [places[i % 3]!, places[(i + 1) % 3]!],
            },
      ),
    };
    expect(expectOk(await seed(doc))).toMatchObject({
      created: 70_000,
      updated: 0,
      unchanged: 0,
      subscriptionsRemoved: 0,
    });
    const [rows] = await queryRows<{ subscribers: number; subscriptions: number }>(
      database.db,
      sql`SELECT (SELECT count(*)::int FROM subscribers) AS subscribers,
                 (SELECT count(*)::int FROM subscriptions) AS subscriptions`,
    );
    expect(rows).toEqual({ subscribers: 70_000, subscriptions: 105_000 });
    expect(expectOk(await seed(doc))).toMatchObject({ created: 0, unchanged: 70_000 });
  }, 300_000);
});
