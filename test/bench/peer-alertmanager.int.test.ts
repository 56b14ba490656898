import { chmod, mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import {
  alertmanagerConfig,
  findAlertmanager,
  peerRows,
  runAlertmanagerPeer,
} from '../../bench/peer-alertmanager.js';
import { startBenchReceiver, type BenchReceiver } from '../../bench/sinks.js';

/**
 * The Alertmanager peer of `npm run bench -- --peer alertmanager`. Where the binary is
 * installed (Debian's prometheus-alertmanager, or ALERTMANAGER_BIN) it really runs and every
 * alert must come back as a webhook of its own; where it is not, the result must be a skipped
 * record that says which binary is missing.
 */

const N = 300;

/** Pids of the running processes whose command line holds `text` (Linux /proc). */
async function pidsRunning(text: string): Promise<number[]> {
  const pids: number[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmdline = await readFile(`/proc/${entry}/cmdline`, 'utf8');
      if (cmdline.includes(text)) pids.push(Number(entry));
    } catch {
      // Gone between the listing and the read.
    }
  }
  return pids;
}

describe('alertmanagerConfig', () => {
  it('turns grouping off and sends each alert at once, one alert a webhook, to the given URL', () => {
    const url = 'http://127.0.0.1:4567/peer/alertmanager';
    const config = parse(alertmanagerConfig(url)) as {
      route: Record<string, unknown>;
      receivers: { name: string; webhook_configs: Record<string, unknown>[] }[];
    };
    expect(config.route).toEqual({
      receiver: 'bench',
      group_by: ['...'],
      group_wait: '0s',
      group_interval: '5m',
      repeat_interval: '24h',
    });
    expect(config.receivers).toEqual([
      {
        name: 'bench',
        webhook_configs: [{ url, send_resolved: false, max_alerts: 0 }],
      },
    ]);
  });
});

describe('findAlertmanager', () => {
  let dir: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(os.tmpdir(), 'qwn-peer-find-'));
    await writeFile(join(dir, 'alertmanager'), '#!/bin/sh\n');
    await chmod(join(dir, 'alertmanager'), 0o755);
    await writeFile(join(dir, 'prometheus-alertmanager'), 'not executable');
  });

  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('gives null for an ALERTMANAGER_BIN that is not there, without falling back to PATH', () => {
    expect(findAlertmanager({ ALERTMANAGER_BIN: '/nonexistent', PATH: '' })).toBeNull();
    expect(findAlertmanager({ ALERTMANAGER_BIN: '/nonexistent', PATH: dir })).toBeNull();
  });

  it('takes an ALERTMANAGER_BIN that is an executable file as it is', () => {
    const bin = join(dir, 'alertmanager');
    expect(findAlertmanager({ ALERTMANAGER_BIN: bin, PATH: '' })).toBe(bin);
  });

  it('finds an executable of either name on PATH, and nothing on an empty PATH', () => {
    // The file named prometheus-alertmanager here is not executable: it is passed over.
    expect(findAlertmanager({ PATH: `/nonexistent${delimiter}${dir}` })).toBe(
      join(dir, 'alertmanager'),
    );
    expect(findAlertmanager({ PATH: '' })).toBeNull();
    expect(findAlertmanager({})).toBeNull();
  });
});

describe('the bench receiver, route /peer/', () => {
  let receiver: BenchReceiver;

  beforeAll(async () => {
    receiver = await startBenchReceiver();
  });

  afterAll(async () => {
    await receiver?.close();
  });

  it('counts unsigned POSTs and their alerts, answers its counters to a GET, and resets', async () => {
    const post = (path: string, body: string) =>
      fetch(`${receiver.origin}${path}`, { method: 'POST', body }).then((r) => r.status);
    const before = Date.now();
    expect(await post('/peer/alertmanager', JSON.stringify({ alerts: [{}, {}] }))).toBe(204);
    expect(await post('/peer/other', JSON.stringify({ alerts: [{}] }))).toBe(204);
    expect(await post('/peer/alertmanager', 'not json')).toBe(400);
    expect(receiver.peerRequests).toBe(2);
    expect(receiver.peerAlerts).toBe(3);
    expect(receiver.peerLastAt).toBeGreaterThanOrEqual(before);
    const answer = await fetch(`${receiver.origin}/peer/counts`);
    expect(JSON.parse(await answer.text())).toEqual({
      requests: 2,
      alerts: 3,
      lastAt: receiver.peerLastAt,
    });

    // The signed routes still refuse what is not signed, and count nothing for the peer.
    expect(await post('/hooks/1', '{}')).toBe(401);
    expect(receiver.peerRequests).toBe(2);

    receiver.reset();
    expect([receiver.peerRequests, receiver.peerAlerts, receiver.peerLastAt]).toEqual([0, 0, 0]);
  });
});

describe('runAlertmanagerPeer', () => {
  let receiver: BenchReceiver;

  beforeAll(async () => {
    receiver = await startBenchReceiver();
  });

  afterAll(async () => {
    await receiver?.close();
  });

  it('runs the installed Alertmanager, one webhook an alert, or says which binary is missing', async () => {
    const binary = findAlertmanager();
    const result = await runAlertmanagerPeer({
      receiverOrigin: receiver.origin,
      notifications: N,
      timeoutMs: 30_000,
    });

    if (binary === null) {
      if (!('skipped' in result)) throw new Error('ran although no binary was found');
      expect(Object.keys(result).sort()).toEqual(['name', 'skipped']);
      const chosen = process.env.ALERTMANAGER_BIN;
      expect(result.skipped).toContain(chosen ? chosen : 'prometheus-alertmanager');
      expect(peerRows([result], undefined, undefined)).toEqual([
        { label: 'Alertmanager', cells: [`skipped: ${result.skipped}`, ''] },
      ]);
      expect(receiver.peerRequests).toBe(0);
      return;
    }

    if ('skipped' in result) throw new Error(`skipped with ${binary} there: ${result.skipped}`);
    expect(result.binary).toBe(binary);
    expect(result.version).toMatch(/^\d+\.\d+/);
    expect(result.complete).toBe(true);
    expect(result.notifications).toBe(N);
    expect(result.activeBefore).toBe(0);
    expect(result.alertsReceived).toBe(N);
    // Grouping off: one alert a webhook.
    expect(result.webhooks).toBe(N);
    expect(receiver.peerRequests).toBe(N);
    expect(receiver.peerAlerts).toBe(N);
    expect(receiver.peerLastAt).toBeGreaterThan(0);
    // The signed routes see nothing of it.
    expect(receiver.received.size).toBe(0);
    expect(receiver.badSignatures).toBe(0);

    expect(result.seconds).toBeGreaterThan(0);
    expect(result.webhooksPerSecond).toBeCloseTo(result.webhooks / result.seconds, 6);
    expect(result.cpuSeconds.alertmanager).toBeGreaterThan(0);
    expect(result.cpuSeconds.feeder).toBeGreaterThan(0);
    expect(result.cpuMsPerNotification).toBeCloseTo(
      ((result.cpuSeconds.alertmanager + result.cpuSeconds.feeder) / N) * 1000,
      9,
    );
    expect(result.memoryMb).toBeGreaterThan(0);
    expect(parse(result.config)).toMatchObject({ route: { group_by: ['...'] } });

    // Gone afterwards: no process runs with its config file, and its directory is removed.
    const configArg = result.args.find((a) => a.startsWith('--config.file='))!;
    expect(await pidsRunning(configArg)).toEqual([]);
    const dir = dirname(configArg.slice('--config.file='.length));
    await expect(readdir(dir)).rejects.toMatchObject({ code: 'ENOENT' });

    const rows = peerRows([result], undefined, {
      coldCpuMs: [1.5],
      warmCpuMs: [1.2],
      webhooksPerSecond: [2000],
      bothChannelsCpuMs: 1.75,
    });
    for (const row of rows) expect(row.cells).toHaveLength(2);
    expect(rows.find((r) => r.label === 'webhooks/s')?.cells).toEqual([
      Math.round(result.webhooksPerSecond).toLocaleString('en-US'),
      '2,000',
    ]);
    expect(rows.find((r) => r.label.startsWith('CPU ms per webhook'))?.cells).toEqual([
      result.cpuMsPerNotification.toFixed(2),
      '1.50',
    ]);
    expect(rows.find((r) => r.label.includes('both channels'))?.cells).toEqual(['–', '1.75']);
    expect(rows.find((r) => r.label === 'durable / signed')?.cells).toEqual([
      'no / no',
      'yes / yes',
    ]);
  });

  it('measures only the new alerts when as many earlier ones are still active', async () => {
    if (findAlertmanager() === null) {
      // Nothing to run: the skipped record is the test above's.
      expect(
        await runAlertmanagerPeer({
          receiverOrigin: receiver.origin,
          notifications: N,
          activeBefore: N,
        }),
      ).toHaveProperty('skipped');
      return;
    }
    receiver.reset();
    const result = await runAlertmanagerPeer({
      receiverOrigin: receiver.origin,
      notifications: N,
      activeBefore: 2 * N,
      timeoutMs: 30_000,
    });
    if ('skipped' in result) throw new Error(result.skipped);
    expect(result.activeBefore).toBe(2 * N);
    expect(result.complete).toBe(true);
    // The earlier alerts arrived first, each once; the measured figures count the new ones only.
    expect(receiver.peerAlerts).toBe(3 * N);
    expect(receiver.peerRequests).toBe(3 * N);
    expect(result.alertsReceived).toBe(N);
    expect(result.webhooks).toBe(N);
    expect(result.cpuMsPerNotification).toBeCloseTo(
      ((result.cpuSeconds.alertmanager + result.cpuSeconds.feeder) / N) * 1000,
      9,
    );
  });
});
