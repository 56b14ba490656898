import { describe, expect, it } from 'vitest';
import { describeSeedProblem } from '../../src/admin/seed-problems.js';
import { applySeed, parseSeedText, SeedError, seedFormatOf } from '../../src/admin/seed.js';
import {
  resolveEntry,
  type CityLookup,
  type CityLookupParams,
} from '../../src/admin/seed-locations.js';
import {
  checkEmail,
  checkWebhookSecret,
  checkWebhookUrl,
  generateWebhookSecret,
  validateDocument,
  type LocationEntry,
} from '../../src/admin/seed-validate.js';
import type { Db } from '../../src/db/client.js';
import { createLogger } from '../../src/logger.js';
import { UpstreamServerError } from '../../src/qweather/errors.js';
import type { Place } from '../../src/qweather/normalize.js';

function place(id: string, name: string, adm1: string, lon: number, lat: number): Place {
  return {
    id,
    name,
    lat,
    lon,
    adm1,
    adm2: adm1,
    country: '中国',
    tz: 'Asia/Shanghai',
    utcOffset: '+08:00',
    isDst: false,
    type: 'city',
    rank: 50,
    fxLink: '',
  };
}

const HANGZHOU = place('101210101', '杭州', '浙江省', 120.2108, 30.246);
const XIHU = place('101210113', '西湖', '浙江省', 120.1474, 30.2729);
const XIHU_TOWN = place('101210114', '西湖区', '浙江省', 120.13, 30.26);
const BEIJING = place('101010100', '北京', '北京市', 116.4053, 39.905);
const CHAOYANG_BJ = place('101010300', '朝阳', '北京市', 116.4864, 39.9215);
const CHAOYANG_LN = place('101071201', '朝阳', '辽宁省', 120.4512, 41.5768);

/** A plain stand-in for the city lookup with the simulator's behaviour on a few places. */
function stubLookup(): CityLookup & { calls: CityLookupParams[] } {
  const calls: CityLookupParams[] = [];
  return {
    calls,
    lookupCity(params) {
      calls.push(params);
      const { location, adm } = params;
      const all = [HANGZHOU, XIHU, XIHU_TOWN, BEIJING, CHAOYANG_BJ, CHAOYANG_LN];
      if (location === 'broken') {
        return Promise.reject(
          new UpstreamServerError('lookupCity: upstream answered 500', {
            operation: 'lookupCity',
            httpStatus: 500,
          }),
        );
      }
      const coords = /^(-?[\d.]+),(-?[\d.]+)$/.exec(location);
      if (coords) {
        // The upstream answers the nearest place first; the stub answers a farther one first
        // to prove the seed picks the nearest itself.
        return Promise.resolve([BEIJING, XIHU, HANGZHOU]);
      }
      const byId = all.filter((p) => p.id === location);
      if (byId.length > 0) return Promise.resolve(byId);
      const matches = all.filter(
        (p) =>
          p.name.includes(location) &&
          (adm === undefined || p.adm1.startsWith(adm) || p.adm2.startsWith(adm)),
      );
      return Promise.resolve(matches);
    },
  };
}

/** A database that fails the test if anything touches it: problems must never reach it. */
const untouchableDb = new Proxy(
  {},
  {
    get(_target, property) {
      throw new Error(`the database was used (${String(property)}) although the seed had problems`);
    },
  },
) as Db;

const logger = createLogger('silent');

async function problemsOf(doc: unknown, lookup: CityLookup = stubLookup()) {
  const result = await applySeed({ db: untouchableDb, lookup, logger }, doc);
  if (result.ok) throw new Error('expected problems, got success');
  return result.problems;
}

const goodEmail = { email: 'duty@example.com', locations: ['101210101'] };
const goodWebhook = { webhook: 'https://hooks.example.com/qweather', locations: ['101010100'] };

describe('parseSeedText', () => {
  it('reads JSON', () => {
    expect(parseSeedText('{"subscribers": []}', 'json')).toEqual({ subscribers: [] });
  });

  it('reports a JSON syntax error with its line and column', () => {
    const text = '{\n  "subscribers": [\n    {"email": "a@b.cn",}\n  ]\n}';
    let error: unknown;
    try {
      parseSeedText(text, 'json');
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(SeedError);
    expect((error as SeedError).line).toBe(3);
    expect((error as SeedError).column).toBe(24);
    expect((error as SeedError).message).toMatch(/^line 3, column 24: invalid JSON/);
  });

  it('points at the end of a JSON file that stops early', () => {
    const error = catchSeedError(() => parseSeedText('{\n "subscribers": [', 'json'));
    expect(error.line).toBe(2);
  });

  it('reads YAML with every scalar as text, and empty or ~ values as null', () => {
    const doc = parseSeedText(
      [
        'subscribers:',
        '  - email: duty@example.com',
        '    locations: [101210101, 120.16,30.27]',
        '    types: [1003, no]',
        '    name:',
        '    minLevel: ~',
        '    lang: "null"',
      ].join('\n'),
      'yaml',
    );
    expect(doc).toEqual({
      subscribers: [
        {
          email: 'duty@example.com',
          locations: ['101210101', '120.16', '30.27'],
          types: ['1003', 'no'],
          name: null,
          minLevel: null,
          lang: 'null',
        },
      ],
    });
  });

  it('reports a YAML syntax error with its line', () => {
    const error = catchSeedError(() =>
      parseSeedText('subscribers:\n  - email: a@b.cn\n    locations: [1,\n  - x', 'yaml'),
    );
    expect(error.line).not.toBeNull();
    expect(error.message).toMatch(/invalid YAML/);
  });

  it('refuses duplicate YAML keys', () => {
    const error = catchSeedError(() =>
      parseSeedText('subscribers:\n  - email: a@b.cn\n    email: c@d.cn\n', 'yaml'),
    );
    expect(error.line).toBe(3);
  });

  it('strips a byte-order mark', () => {
    expect(parseSeedText('\uFEFF{"subscribers": []}', 'json')).toEqual({ subscribers: [] });
  });

  it('picks the format from the file name', () => {
    expect(seedFormatOf('a/seed.json')).toBe('json');
    expect(seedFormatOf('seed.YAML')).toBe('yaml');
    expect(seedFormatOf('seed.yml')).toBe('yaml');
    expect(seedFormatOf('seed.txt')).toBeNull();
  });
});

function catchSeedError(fn: () => unknown): SeedError {
  try {
    fn();
  } catch (err) {
    if (err instanceof SeedError) return err;
    throw err;
  }
  throw new Error('expected a SeedError');
}

describe('document shape', () => {
  it.each([
    ['an array', []],
    ['null', null],
    ['a string', 'subscribers'],
  ])('refuses %s as the document', async (_label, doc) => {
    expect(await problemsOf(doc)).toEqual([
      { index: null, field: '', message: expect.stringMatching(/"subscribers" array/) as string },
    ]);
  });

  it('needs a subscribers array and refuses unknown top-level fields', async () => {
    const problems = await problemsOf({ subscriber: [] });
    expect(problems.map((p) => [p.index, p.field])).toEqual(
      expect.arrayContaining([
        [null, 'subscribers'],
        [null, 'subscriber'],
      ]),
    );
  });

  it('refuses a subscriber that is not an object', async () => {
    expect(await problemsOf({ subscribers: ['duty@example.com'] })).toEqual([
      { index: 0, field: '', message: 'must be an object' },
    ]);
  });

  it('refuses unknown subscriber fields (a typo must not be ignored)', async () => {
    const problems = await problemsOf({ subscribers: [{ ...goodEmail, minlevel: '黄色' }] });
    expect(problems).toEqual([{ index: 0, field: 'minlevel', message: 'is not a known field' }]);
  });

  it('accepts an empty list of subscribers', async () => {
    const result = await applySeed(
      { db: untouchableDb, lookup: stubLookup(), logger },
      { subscribers: [] },
      { dryRun: true },
    );
    expect(result).toEqual({
      ok: true,
      created: 0,
      updated: 0,
      unchanged: 0,
      subscriptionsRemoved: 0,
      generatedSecrets: [],
      unsubscribed: [],
      resubscribed: [],
    });
  });
});

describe('addresses', () => {
  it('needs exactly one of email and webhook', async () => {
    expect(await problemsOf({ subscribers: [{ locations: ['101210101'] }] })).toEqual([
      {
        index: 0,
        field: 'email',
        message: expect.stringMatching(/needs an "email" or a "webhook"/) as string,
      },
    ]);
    expect(
      await problemsOf({
        subscribers: [
          { email: 'a@example.com', webhook: 'https://x.example.com/', locations: ['101210101'] },
        ],
      }),
    ).toEqual([
      { index: 0, field: 'webhook', message: expect.stringMatching(/exactly one/) as string },
    ]);
  });

  it.each([
    'duty',
    'duty@example',
    'duty@@example.com',
    '@example.com',
    'du ty@example.com',
    'duty@example..com',
    'duty@.example.com',
    'duty@example.com ',
  ])('refuses the email address %j', async (email) => {
    const problems = await problemsOf({ subscribers: [{ ...goodEmail, email }] });
    expect(problems).toEqual([
      { index: 0, field: 'email', message: expect.stringMatching(/email address/) as string },
    ]);
  });

  it.each(['duty@example.com', 'first.last+qwn@mail.example.com.cn', '值班@例子.中国'])(
    'accepts the email address %j, which the database accepts too',
    (email) => {
      expect(checkEmail(email)).toBeNull();
      expect(email).toMatch(/^[^@\s]+@[^@\s]+\.[^@\s]+$/);
    },
  );

  it.each([
    ['ftp://hooks.example.com/x', /http or https/],
    ['hooks.example.com/x', /absolute/],
    ['/qweather', /absolute/],
    ['https://user:pass@hooks.example.com/x', /credentials/],
    ['https://token@hooks.example.com/x', /credentials/],
    ['https://hooks.example.com/x#frag', /fragment/],
    ['HTTPS://hooks.example.com/x', /lower-case scheme/],
    ['https://hooks.example.com/a b', /no spaces|absolute/],
  ])('refuses the webhook URL %j', async (webhook, why) => {
    const problems = await problemsOf({ subscribers: [{ ...goodWebhook, webhook }] });
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatchObject({ index: 0, field: 'webhook' });
    expect(problems[0]?.message).toMatch(why);
  });

  it.each([
    'https://hooks.example.com/qweather',
    'http://10.0.0.5:8080/hook?x=1',
    'https://h.example.com',
  ])('accepts the webhook URL %j, which the database accepts too', (url) => {
    expect(checkWebhookUrl(url)).toBeNull();
    expect(url).toMatch(/^https?:\/\/[^/@\s]+(\/\S*)?$/);
  });
});

describe('webhook secrets', () => {
  const secretOf = (bytes: number) => `whsec_${Buffer.alloc(bytes, 7).toString('base64')}`;

  it('accepts 24 to 64 bytes of base64 after whsec_, padded or not', () => {
    expect(checkWebhookSecret('whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw')).toBeNull();
    expect(checkWebhookSecret(secretOf(24))).toBeNull();
    expect(checkWebhookSecret(secretOf(64))).toBeNull();
    expect(checkWebhookSecret(secretOf(32).replace(/=+$/, ''))).toBeNull();
  });

  it.each([
    ['MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', /start with "whsec_"/],
    ['whsec_not base64 at all!!!!!!!!!!!!!!!', /base64/],
    ['whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaS', /valid base64/],
    [secretOf(23), /24–64 bytes \(got 23\)/],
    [secretOf(65), /24–64 bytes \(got 65\)/],
  ])('refuses the secret %j', async (secret, why) => {
    const problems = await problemsOf({ subscribers: [{ ...goodWebhook, secret }] });
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatchObject({ index: 0, field: 'secret' });
    expect(problems[0]?.message).toMatch(why);
    // The message names the rule, never the secret itself.
    expect(problems[0]?.message).not.toContain(secret.slice(6, 20));
  });

  it('refuses a secret on an email subscriber', async () => {
    expect(await problemsOf({ subscribers: [{ ...goodEmail, secret: secretOf(32) }] })).toEqual([
      {
        index: 0,
        field: 'secret',
        message: 'only webhook, dingtalk and feishu subscribers have a secret',
      },
    ]);
  });

  it('generates 32 random bytes that pass its own rule and the database constraint', () => {
    const a = generateWebhookSecret();
    const b = generateWebhookSecret();
    expect(a).not.toBe(b);
    expect(checkWebhookSecret(a)).toBeNull();
    expect(Buffer.from(a.slice(6), 'base64')).toHaveLength(32);
    expect(a).toMatch(/^whsec_[A-Za-z0-9+/]{32,88}={0,2}$/);
  });
});

describe('other subscriber fields', () => {
  it('knows only zh and en', async () => {
    expect(await problemsOf({ subscribers: [{ ...goodEmail, lang: 'fr' }] })).toEqual([
      { index: 0, field: 'lang', message: 'must be "zh" or "en"' },
    ]);
  });

  it('refuses an empty name', async () => {
    const problems = await problemsOf({ subscribers: [{ ...goodEmail, name: '  ' }] });
    expect(problems).toEqual([{ index: 0, field: 'name', message: 'must not be empty' }]);
  });

  it('reports filter problems by field', async () => {
    const problems = await problemsOf({
      subscribers: [{ ...goodEmail, minLevel: '紫色', types: [''], events: ['new', 'ended'] }],
    });
    expect(problems.map((p) => p.field)).toEqual(['minLevel', 'types[0]', 'events[1]']);
    expect(problems.every((p) => p.index === 0)).toBe(true);
  });

  it('refuses empty filter lists', async () => {
    const problems = await problemsOf({ subscribers: [{ ...goodEmail, types: [], events: [] }] });
    expect(problems.map((p) => p.field)).toEqual(['types', 'events']);
  });

  it('refuses a second subscriber with the same address, whatever its case', async () => {
    const problems = await problemsOf({
      subscribers: [
        goodEmail,
        goodWebhook,
        { ...goodEmail, email: 'Duty@Example.com' },
        goodWebhook,
      ],
    });
    expect(problems).toEqual([
      {
        index: 2,
        field: 'email',
        message: 'duplicates subscribers[0]: an address may appear only once',
      },
      {
        index: 3,
        field: 'webhook',
        message: 'duplicates subscribers[1]: an address may appear only once',
      },
    ]);
  });
});

describe('locations', () => {
  it('needs at least one', async () => {
    expect(await problemsOf({ subscribers: [{ email: 'a@example.com', locations: [] }] })).toEqual([
      { index: 0, field: 'locations', message: 'must list at least one location' },
    ]);
    const missing = await problemsOf({ subscribers: [{ email: 'a@example.com' }] });
    expect(missing.map((p) => p.field)).toEqual(['locations']);
  });

  it.each([
    [101210101, '', /as a string/],
    [['101210101'], '', /Location ID/],
    ['', '', /must not be empty/],
    ['200.5,30.2', '', /longitude/],
    ['120.5,95', '', /latitude/],
    ['120.5;30', '', /looks like coordinates/],
    [{ adm: '杭州' }, '.query', /expected string/],
    [{ query: '西湖', adm: '' }, '.adm', /must not be empty/],
    [{ query: '西湖', range: 'china' }, '.range', /2-letter/],
    [{ query: '西湖', country: 'cn' }, '.country', /not a known field/],
  ])('refuses the entry %j', async (entry, suffix, why) => {
    const problems = await problemsOf({ subscribers: [{ ...goodEmail, locations: [entry] }] });
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatchObject({ index: 0, field: `locations[0]${suffix}` });
    expect(problems[0]?.message).toMatch(why);
  });

  it('names both candidates of an ambiguous name and asks for adm', async () => {
    const problems = await problemsOf({ subscribers: [{ ...goodEmail, locations: ['朝阳'] }] });
    expect(problems).toEqual([
      {
        index: 0,
        field: 'locations[0]',
        message: '朝阳 matches 2 places (朝阳, 北京 / 朝阳, 辽宁): add adm',
      },
    ]);
  });

  it('reports a name that matches nothing, with its adm', async () => {
    const problems = await problemsOf({
      subscribers: [{ ...goodEmail, locations: [{ query: '朝阳', adm: '广东' }, '不存在'] }],
    });
    expect(problems).toEqual([
      { index: 0, field: 'locations[0]', message: '朝阳 (adm 广东) matches no place' },
      { index: 0, field: 'locations[1]', message: '不存在 matches no place' },
    ]);
  });

  it('reports an unknown Location ID', async () => {
    const problems = await problemsOf({
      subscribers: [{ ...goodEmail, locations: ['101999999'] }],
    });
    expect(problems).toEqual([
      { index: 0, field: 'locations[0]', message: 'no place has the Location ID 101999999' },
    ]);
  });

  it('turns an upstream failure into a problem naming the entry', async () => {
    const problems = await problemsOf({ subscribers: [{ ...goodEmail, locations: ['broken'] }] });
    expect(problems).toEqual([
      {
        index: 0,
        field: 'locations[0]',
        message: 'broken: city lookup failed: lookupCity: upstream answered 500',
      },
    ]);
  });

  it('lists every problem of every subscriber, lookups included, in file order', async () => {
    const lookup = stubLookup();
    const problems = await problemsOf(
      {
        subscribers: [
          { ...goodEmail, locations: ['朝阳', '101210101'] },
          { email: 'bad', locations: ['不存在'], minLevel: 'x' },
          goodWebhook,
          { webhook: 'ftp://x.example.com/', locations: ['朝阳'] },
        ],
        extra: true,
      },
      lookup,
    );
    expect(problems.map((p) => `${p.index}:${p.field}`)).toEqual(['null:extra']);
    // A bad document stops before the lookups: there is nothing sound to resolve.
    expect(lookup.calls).toHaveLength(0);

    const all = await problemsOf(
      {
        subscribers: [
          { ...goodEmail, locations: ['朝阳', '101210101'] },
          { email: 'bad', locations: ['不存在'], minLevel: 'x' },
          goodWebhook,
          { webhook: 'ftp://x.example.com/', locations: ['朝阳'] },
        ],
      },
      lookup,
    );
    expect(all.map((p) => `${p.index}:${p.field}`)).toEqual([
      '0:locations[0]',
      '1:email',
      '1:minLevel',
      '1:locations[0]',
      '3:webhook',
      '3:locations[0]',
    ]);
    // Each distinct entry is looked up once, however many subscribers list it.
    expect(lookup.calls.filter((c) => c.location === '朝阳')).toHaveLength(1);
  });
});

describe('resolution choices', () => {
  const resolvedId = async (entry: LocationEntry, lookup: CityLookup = stubLookup()) => {
    const resolution = await resolveEntry(lookup, entry);
    if (!resolution.ok) throw new Error(resolution.message);
    return resolution.place.id;
  };

  it('resolves 朝阳 once adm decides', async () => {
    const lookup = stubLookup();
    expect(
      await resolvedId({ kind: 'name', query: '朝阳', adm: '辽宁', range: null }, lookup),
    ).toBe('101071201');
    expect(lookup.calls).toEqual([{ location: '朝阳', adm: '辽宁', number: 20 }]);
  });

  it('prefers the one exact name over partial matches', async () => {
    expect(await resolvedId({ kind: 'name', query: '西湖', adm: null, range: null })).toBe(
      '101210113',
    );
  });

  it('takes the nearest place to coordinates, whatever order the answer has', async () => {
    const coordinates = { lon: 120.16, lat: 30.27 };
    expect(await resolvedId({ kind: 'coordinates', text: '120.16,30.27', coordinates })).toBe(
      '101210113',
    );
  });

  it('keeps only what a subscription needs, with a time zone even when none was sent', async () => {
    const lookup: CityLookup = {
      lookupCity: () => Promise.resolve([{ ...HANGZHOU, tz: '', adm2: '' }]),
    };
    expect(await resolveEntry(lookup, { kind: 'id', id: '101210101' })).toEqual({
      ok: true,
      place: {
        id: '101210101',
        name: '杭州',
        lat: 30.246,
        lon: 120.2108,
        tz: 'Asia/Shanghai',
        adm1: '浙江省',
        adm2: null,
        country: '中国',
      },
    });
  });

  it('passes adm and a lower-cased range to the lookup', async () => {
    const lookup = stubLookup();
    const outcome = await applySeed(
      { db: untouchableDb, lookup, logger },
      { subscribers: [{ ...goodEmail, locations: [{ query: '北京', range: 'CN' }, '101210101'] }] },
    ).catch((err: unknown) => err);
    // Reaching the database proves validation and resolution passed.
    expect((outcome as Error).message).toMatch(/database was used/);
    expect(lookup.calls).toContainEqual({ location: '北京', range: 'cn', number: 20 });
    expect(lookup.calls).toContainEqual({ location: '101210101' });
  });
});

describe('chat-robot subscribers', () => {
  const WECOM = 'https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=3f2a7c1e-9b8d-4e6f-a5c4';
  const DING = 'https://oapi.dingtalk.com/robot/send?access_token=8c1d5e2b9a7f3e6d4c0b';
  const FEISHU = 'https://open.feishu.cn/open-apis/bot/v2/hook/5e1c9a2f-7b3d-4c8e';
  const LARK = 'https://open.larksuite.com/open-apis/bot/v2/hook/0a9b8c7d-6e5f';
  const secrets = ['3f2a7c1e-9b8d-4e6f-a5c4', '8c1d5e2b9a7f3e6d4c0b', '5e1c9a2f-7b3d-4c8e'];
  const lines = (doc: { subscribers: unknown[] }) =>
    validateDocument(doc).problems.map((p) => describeSeedProblem(doc, p));

  it('accepts each vendor, Lark hooks, and a signing secret for DingTalk and Feishu', () => {
    const doc = {
      subscribers: [
        { name: '杭州值班群', wecom: WECOM, locations: ['101210101'] },
        { name: '应急钉钉群', dingtalk: DING, secret: 'SECabc123', locations: ['101210101'] },
        { name: '飞书值班', feishu: FEISHU, secret: 'fs-secret', locations: ['101210101'] },
        { name: 'Lark desk', feishu: LARK, locations: ['101210101'] },
      ],
    };
    const validated = validateDocument(doc);
    expect(validated.problems).toEqual([]);
    expect(validated.subscribers.map((s) => s.address)).toEqual([
      { channel: 'robot', vendor: 'wecom', url: WECOM, secret: null },
      { channel: 'robot', vendor: 'dingtalk', url: DING, secret: 'SECabc123' },
      { channel: 'robot', vendor: 'feishu', url: FEISHU, secret: 'fs-secret' },
      { channel: 'robot', vendor: 'feishu', url: LARK, secret: null },
    ]);
  });

  it('names the subscriber in every problem and never quotes the robot URL or secret', () => {
    const doc = {
      subscribers: [
        { name: 'both', wecom: WECOM, email: 'a@example.com', locations: ['101210101'] },
        { name: 'no key', wecom: WECOM.replace('key=', 'kee='), locations: ['101210101'] },
        { name: 'wrong vendor', dingtalk: FEISHU, locations: ['101210101'] },
        { name: 'signed wecom', wecom: WECOM, secret: 'SECx', locations: ['101210101'] },
        { name: 'bad ding secret', dingtalk: DING, secret: 'plain', locations: ['101210101'] },
        { feishu: FEISHU.replace('/hook/', '/hooks/'), locations: ['101210101'] },
        { name: 'ftp', feishu: 'ftp://open.feishu.cn/x', locations: ['101210101'] },
        { name: 'dup', wecom: WECOM, locations: ['101210101'] },
        { name: 'dup again', wecom: WECOM, locations: ['101210101'] },
      ],
    };
    const out = lines(doc);
    expect(out).toEqual([
      expect.stringMatching(/^subscribers\[0\]\.wecom \(both\): a subscriber has exactly one of/),
      expect.stringMatching(
        /^subscribers\[1\]\.wecom \(no key\): wecom robot URL qyapi\.weixin\.qq\.com#[0-9a-f]{8} has no key= parameter$/,
      ),
      expect.stringMatching(/^subscribers\[2\]\.dingtalk \(wrong vendor\): .*no access_token=/),
      'subscribers[3].secret (signed wecom): wecom robots are not signed: remove "secret"',
      expect.stringMatching(/^subscribers\[4\]\.secret \(bad ding secret\): .*starts with "SEC"/),
      expect.stringMatching(
        /^subscribers\[5\]\.feishu \(feishu open\.feishu\.cn#[0-9a-f]{8}\): .*not a \/open-apis\/bot\/v2\/hook\/<token> URL$/,
      ),
      'subscribers[6].feishu (ftp): feishu robot URL must be https, not ftp:',
      expect.stringMatching(/^subscribers\[8\]\.wecom \(dup again\): duplicates subscribers\[7\]/),
    ]);
    const text = out.join('\n');
    for (const secret of [...secrets, 'plain', 'SECx']) expect(text).not.toContain(secret);
  });
});
