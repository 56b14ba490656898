import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { displayWidth } from '../../src/cli/table.js';
import { startSimulator, v1Alert, v7Warning, type Simulator } from '../../src/simulator/index.js';
import { qwnInProcess, type QwnRun } from '../support/cli.js';

const KEY = 'cli-test-key-41c7e2';

let sim: Simulator;
// A directory without a .env file, so only the environment given here counts.
let cwd: string;

beforeAll(async () => {
  sim = await startSimulator({ apiKey: KEY });
  cwd = mkdtempSync(join(tmpdir(), 'qwn-cli-'));
});

afterEach(() => {
  sim.clearFaults();
  sim.clearWarnings();
  sim.setAlerts([]);
});

afterAll(async () => {
  await sim.close();
  rmSync(cwd, { recursive: true, force: true });
});

function qwn(args: string[], env: Record<string, string | undefined> = {}): Promise<QwnRun> {
  return qwnInProcess(args, {
    cwd,
    unset: /^(QWEATHER_|LOG_LEVEL)/,
    env: { QWEATHER_API_URL: sim.url, QWEATHER_API_KEY: KEY, ...env },
  });
}

/** Display column at which `text` starts in `line`. */
const columnOf = (line: string, text: string): number => {
  const at = line.indexOf(text);
  expect(at).toBeGreaterThanOrEqual(0);
  return displayWidth(line.slice(0, at));
};

describe('qwn lookup', () => {
  it('prints an aligned table with Hangzhou first', async () => {
    const run = await qwn(['lookup', '杭州']);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const [header, first, ...rest] = run.stdout.trimEnd().split('\n');
    expect(header?.split(/\s+/)).toEqual([
      'id',
      'name',
      'adm2',
      'adm1',
      'country',
      'lat',
      'lon',
      'tz',
      'rank',
    ]);
    expect(first).toMatch(/^101210101\s+杭州\s+杭州市\s+浙江省\s+中国\s+30\.2460\s+120\.2108/);
    for (const row of [first ?? '', ...rest]) {
      expect(columnOf(row, 'Asia/')).toBe(columnOf(header ?? '', 'tz'));
    }
    expect(columnOf(first ?? '', '浙江省')).toBe(columnOf(header ?? '', 'adm1'));
  });

  it('--json prints the normalized places', async () => {
    const run = await qwn(['lookup', '北京', '--number', '1', '--json']);
    expect(run.code).toBe(0);
    const places = JSON.parse(run.stdout) as { id: string; lat: number }[];
    expect(places).toHaveLength(1);
    expect(places[0]).toMatchObject({ id: '101010100', lat: 39.905 });
  });

  it('a broken rule is one usage line and exit 2', async () => {
    const run = await qwn(['lookup', '杭州', '--number', '30']);
    expect(run.code).toBe(2);
    expect(run.stdout).toBe('');
    expect(run.stderr.trim().split('\n')).toEqual([
      'qwn lookup: number: must be an integer from 1 to 20',
    ]);
  });

  it('an unknown flag is one usage line and exit 2', async () => {
    const run = await qwn(['lookup', '杭州', '--bogus']);
    expect(run.code).toBe(2);
    expect(run.stderr.trim().split('\n')).toHaveLength(1);
    expect(run.stderr).toContain('--bogus');
  });

  it('no QWEATHER_API_URL is one clear line', async () => {
    const run = await qwn(['lookup', '杭州'], { QWEATHER_API_URL: '' });
    expect(run.code).toBe(2);
    expect(run.stderr.trim().split('\n')).toHaveLength(1);
    expect(run.stderr).toContain('QWEATHER_API_URL is not set');
  });

  it('a wrong key is one line on stderr, exit 1, and the key is not shown', async () => {
    const run = await qwn(['lookup', '杭州'], { QWEATHER_API_KEY: 'wrong-key-123456' });
    expect(run.code).toBe(1);
    expect(run.stderr.trim().split('\n')).toHaveLength(1);
    expect(run.stderr).toContain('refused the credentials');
    expect(run.stderr).not.toContain('wrong-key-123456');
  });
});

describe('qwn top and qwn poi', () => {
  it('top --number 3 --json', async () => {
    const run = await qwn(['top', '--number', '3', '--json']);
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout)).toHaveLength(3);
  });

  it('poi by name prints scenic spots', async () => {
    const run = await qwn(['poi', '西湖', '--type', 'scenic']);
    expect(run.code).toBe(0);
    const [header, ...rows] = run.stdout.trimEnd().split('\n');
    expect(header).toMatch(/^id\s+name\s+adm2\s+adm1\s+country\s+lat\s+lon\s+type\s+rank$/);
    expect(rows.length).toBeGreaterThan(0);
    expect(rows.every((r) => r.includes('scenic'))).toBe(true);
  });

  it('poi --near with a radius', async () => {
    const run = await qwn(['poi', '--near', '120.14,30.24', '--radius', '5', '--json']);
    expect(run.code).toBe(0);
    const pois = JSON.parse(run.stdout) as { type: string }[];
    expect(pois.length).toBeGreaterThan(0);
  });

  it('poi with both a name and --near is a usage error', async () => {
    const run = await qwn(['poi', '西湖', '--near', '120.14,30.24']);
    expect(run.code).toBe(2);
  });
});

describe('qwn warnings', () => {
  it('prints title, level, type, status, times and text', async () => {
    sim.setWarnings('101210101', [
      v7Warning({
        locationId: '101210101',
        typeCode: '1003',
        level: '橙色',
        pubTime: '2026-07-01T08:00+08:00',
        text: '预计未来6小时内将出现50毫米以上降水。',
      }),
    ]);
    const run = await qwn(['warnings', '101210101']);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('1 warning in force at 101210101');
    expect(run.stdout).toContain('发布暴雨橙色预警');
    expect(run.stdout).toMatch(/level\s+橙色/);
    expect(run.stdout).toMatch(/type\s+暴雨 \(1003\)/);
    expect(run.stdout).toMatch(/status\s+active/);
    expect(run.stdout).toMatch(/issued\s+2026-07-01T08:00\+08:00/);
    expect(run.stdout).toMatch(/end\s+2026-07-02T08:00\+08:00/);
    expect(run.stdout).toContain('预计未来6小时内将出现50毫米以上降水。');
  });

  it('--json prints the normalized warnings without the raw record', async () => {
    sim.setWarnings('101210101', [
      v7Warning({ locationId: '101210101', typeCode: '1006', level: '蓝色' }),
    ]);
    const run = await qwn(['warnings', '101210101', '--json']);
    expect(run.code).toBe(0);
    const shown = JSON.parse(run.stdout) as { warnings: Record<string, unknown>[] };
    expect(shown.warnings).toHaveLength(1);
    expect(shown.warnings[0]).toMatchObject({ level: '蓝色', typeName: '大风', source: 'v7' });
    expect(shown.warnings[0]).not.toHaveProperty('raw');
  });

  it('says so when nothing is in force', async () => {
    const run = await qwn(['warnings', '120.16,30.27']);
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('No warnings in force at 120.16,30.27');
  });

  it('with v7 pinned, a retired endpoint is one line with the v1 hint, exit 1', async () => {
    sim.addFault({ kind: 'deprecated', operation: 'warningNow' });
    const run = await qwn(['warnings', '101210101'], { QWEATHER_ALERT_SOURCE: 'v7' });
    expect(run.code).toBe(1);
    expect(run.stderr.trim().split('\n')).toHaveLength(1);
    expect(run.stderr).toContain('QWEATHER_ALERT_SOURCE=v1');
  });

  it('by default (auto) a retired v7 is answered from v1', async () => {
    sim.addFault({ kind: 'deprecated', operation: 'warningNow' });
    sim.setAlerts([
      v1Alert({
        area: { locationIds: ['101210101'] },
        typeCode: '1006',
        level: '蓝色',
        headline: '杭州市气象台发布大风蓝色预警',
      }),
    ]);
    const run = await qwn(['warnings', '101210101']);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('杭州市气象台发布大风蓝色预警');
  });

  it('with QWEATHER_ALERT_SOURCE=v1 a Location ID is resolved to its coordinates', async () => {
    sim.setAlerts([
      v1Alert({
        area: { locationIds: ['101210101'] },
        typeCode: '1009',
        level: '红色',
        headline: '杭州市气象台发布高温红色预警',
      }),
    ]);
    const run = await qwn(['warnings', '101210101'], { QWEATHER_ALERT_SOURCE: 'v1' });
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('杭州市气象台发布高温红色预警');
    expect(run.stdout).toMatch(/level\s+红色/);
  });
});
