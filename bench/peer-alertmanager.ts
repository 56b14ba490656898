import { spawn, type ChildProcess } from 'node:child_process';
import { rmSync } from 'node:fs';
import { mkdtemp, writeFile } from 'node:fs/promises';
import os from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Agent, request } from 'undici';
import { median } from './median.js';
import {
  cpuSeconds,
  exited,
  freeLoopbackPort,
  isExecutableFile,
  leaveToJanitor,
  memoryMb,
  onPath,
} from './procs.js';
import { sampleNotification } from './sample.js';
import type { PeerCounts } from './sinks.js';

/**
 * Prometheus Alertmanager measured side by side with qwn's webhook channel: same receiver,
 * same run, as many notifications as the storm's webhooks. Grouping is off, so every alert is
 * a group of its own and leaves as one webhook, as each of qwn's webhook notifications does.
 * Alertmanager neither signs its webhooks nor keeps its alerts across a restart; the table
 * says so next to the figures.
 */

export type PeerResult =
  | { name: 'alertmanager'; skipped: string }
  | {
      name: 'alertmanager';
      version: string;
      binary: string;
      args: string[];
      config: string;
      notifications: number;
      /**
       * Alerts fed and sent before the measured ones, still active while those are measured
       * (a second storm while the first holds); 0 for a fresh Alertmanager.
       */
      activeBefore: number;
      webhooks: number;
      alertsReceived: number;
      /** Every alert arrived before the timeout. */
      complete: boolean;
      /** From the first POST of alerts to the last webhook received. */
      seconds: number;
      webhooksPerSecond: number;
      /** feeder: this process (feeding the alerts and the receiver answering the webhooks). */
      cpuSeconds: { alertmanager: number; feeder: number };
      /** (alertmanager + feeder) / notifications × 1000. */
      cpuMsPerNotification: number;
      /** Alertmanager's peak resident memory (VmHWM); 0 when /proc cannot tell. */
      memoryMb: number;
    };

/** Debian's name first: its package installs the binary under that name. */
const BINARY_NAMES = ['prometheus-alertmanager', 'alertmanager'] as const;
/**
 * Fed as a Prometheus server feeds it: batches of 256 alerts (its notifier's default), one at a
 * time. Four batches in flight took more CPU and longer on this two-core machine.
 */
const ALERTS_PER_POST = 256;
const POSTS_IN_FLIGHT = 1;
/** The bench's full size: the storm's notifications spread over the places as they are. */
const PLACES = 3184;
const WARNINGS_PER_PLACE = 3;
const STORM_TYPES = ['1003', '1006', '1014', '1001', '1009', '1015', '1017'] as const;
const READY_TIMEOUT_MS = 30_000;
const STOP_GRACE_MS = 5000;
const POLL_MS = 50;
const PROGRESS_EVERY_MS = 5000;

/**
 * The Alertmanager binary to measure: ALERTMANAGER_BIN when set, else the first of its names
 * on PATH. An ALERTMANAGER_BIN that is not an executable file gives null rather than a binary
 * found on PATH: whoever set it asked for that one, and measuring another would mislead.
 */
export function findAlertmanager(env: NodeJS.ProcessEnv = process.env): string | null {
  const chosen = env.ALERTMANAGER_BIN;
  if (chosen) return isExecutableFile(chosen) ? chosen : null;
  for (const name of BINARY_NAMES) {
    const path = onPath(name, env);
    if (path !== null) return path;
  }
  return null;
}

function absenceReason(env: NodeJS.ProcessEnv): string {
  const chosen = env.ALERTMANAGER_BIN;
  if (chosen) return `ALERTMANAGER_BIN=${chosen} is not an executable file`;
  return `no ${BINARY_NAMES.join(' or ')} on PATH (apt-get install prometheus-alertmanager, or set ALERTMANAGER_BIN)`;
}

/**
 * The configuration the peer runs with, kept in the result so the run can be repeated.
 * `group_by: ['...']` turns grouping off and `group_wait: 0s` sends a new group's alert at
 * once, so every alert leaves as one webhook as soon as it is routed. `group_interval` does not
 * delay that first webhook: it paces the re-checks of groups already notified (one per alert
 * here) and bounds each send's retries (Alertmanager gives a send max(group_interval, 10 s)).
 * At 1 s the 84,000 groups of a storm kept Alertmanager's two cores busy with re-checks that
 * send nothing (8 CPU s in 5 s idle after the storm) and the 10 s bound re-sent some webhooks,
 * so it keeps its default of 5m. `repeat_interval` keeps a notified alert from being sent
 * again within the run; above the 120 h data retention Alertmanager warns, so 24h.
 */
export function alertmanagerConfig(receiverUrl: string): string {
  return [
    '# qwn bench peer (bench/peer-alertmanager.ts): grouping off, one webhook per alert.',
    'route:',
    '  receiver: bench',
    "  group_by: ['...']",
    '  group_wait: 0s',
    '  group_interval: 5m',
    '  repeat_interval: 24h',
    'receivers:',
    '  - name: bench',
    '    webhook_configs:',
    `      - url: ${JSON.stringify(receiverUrl)}`,
    '        send_resolved: false',
    '        max_alerts: 0',
    '',
  ].join('\n');
}

interface PostedAlert {
  labels: Record<string, string>;
  annotations: Record<string, string>;
  startsAt: string;
  endsAt: string;
}

/**
 * Alerts shaped like a storm's webhook notifications: a warning of a place for one subscriber,
 * with the warning's title and text, so the webhook bodies are about the size of qwn's.
 */
function stormAlerts(from: number, to: number, startsAt: string, endsAt: string): PostedAlert[] {
  const sample = sampleNotification('peer').warning;
  const alerts: PostedAlert[] = [];
  for (let i = from; i < to; i += 1) {
    const place = i % PLACES;
    const round = Math.floor(i / PLACES);
    const placeId = String(101_000_000 + place * 100);
    const seq = (round % WARNINGS_PER_PLACE) + 1;
    alerts.push({
      labels: {
        alertname: 'QWeatherWarning',
        place: placeId,
        warning: `${placeId}2026070108000000${seq}`,
        type: STORM_TYPES[(place + seq) % STORM_TYPES.length]!,
        event: 'new',
        // One subscriber per alert of a place: the labels of every alert differ.
        subscriber: String(round),
      },
      annotations: { title: sample.title, text: sample.text },
      startsAt,
      endsAt,
    });
  }
  return alerts;
}

function running(child: ChildProcess): boolean {
  return child.exitCode === null && child.signalCode === null;
}

/** Resolves true when the child is gone within `ms`, false otherwise. */
async function exitedWithin(child: ChildProcess, ms: number): Promise<boolean> {
  const timer = new AbortController();
  try {
    return await Promise.race([
      exited(child).then(() => true),
      sleep(ms, false, { signal: timer.signal }),
    ]);
  } finally {
    timer.abort();
  }
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.pid === undefined || !running(child)) return;
  child.kill('SIGTERM');
  if (await exitedWithin(child, STOP_GRACE_MS)) return;
  child.kill('SIGKILL');
  await exited(child);
}

/** Whether the URL answers 200; false while nothing listens there yet. */
async function answersOk(url: string, dispatcher: Agent): Promise<boolean> {
  try {
    const { statusCode, body } = await request(url, { dispatcher });
    await body.dump();
    return statusCode === 200;
  } catch {
    return false;
  }
}

async function getJson<T>(url: string, dispatcher: Agent): Promise<{ status: number; json?: T }> {
  const { statusCode, body } = await request(url, { dispatcher });
  const text = await body.text();
  return statusCode === 200
    ? { status: statusCode, json: JSON.parse(text) as T }
    : { status: statusCode };
}

export async function runAlertmanagerPeer(opts: {
  receiverOrigin: string;
  notifications: number;
  say?: (line: string) => void;
  binary?: string | null;
  timeoutMs?: number;
  /** Feed this many other alerts first, wait for their webhooks, and leave them active. */
  activeBefore?: number;
}): Promise<PeerResult> {
  const say = opts.say ?? (() => undefined);
  const binary = opts.binary === undefined ? findAlertmanager() : opts.binary;
  if (binary === null) return { name: 'alertmanager', skipped: absenceReason(process.env) };
  if (!isExecutableFile(binary)) {
    return { name: 'alertmanager', skipped: `${binary} is not an executable file` };
  }
  const n = opts.notifications;
  if (!Number.isInteger(n) || n < 1) throw new Error(`notifications: ${n}`);
  const activeBefore = opts.activeBefore ?? 0;
  if (!Number.isInteger(activeBefore) || activeBefore < 0) {
    throw new Error(`activeBefore: ${activeBefore}`);
  }
  const timeoutMs = opts.timeoutMs ?? 10 * 60_000;

  const dir = await mkdtemp(join(os.tmpdir(), 'qwn-bench-alertmanager-'));
  const dispatcher = new Agent({ connections: POSTS_IN_FLIGHT + 1 });
  let child: ChildProcess | undefined;
  // An interrupted bench leaves by process.exit: the peer and its files go with it.
  const onExit = () => {
    if (child && running(child)) child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  };
  process.once('exit', onExit);
  try {
    const peerUrl = `${opts.receiverOrigin}/peer/alertmanager`;
    const config = alertmanagerConfig(peerUrl);
    const configFile = join(dir, 'alertmanager.yml');
    await writeFile(configFile, config);
    const port = await freeLoopbackPort();
    const base = `http://127.0.0.1:${port}`;
    const args = [
      `--config.file=${configFile}`,
      `--storage.path=${join(dir, 'data')}`,
      `--web.listen-address=127.0.0.1:${port}`,
      // Empty: no gossip port, and no wait for peers before notifying.
      '--cluster.listen-address=',
      '--log.level=warn',
    ];
    const stderrTail: string[] = [];
    const started = spawn(binary, args, { cwd: dir, env: {}, stdio: ['ignore', 'ignore', 'pipe'] });
    child = started;
    if (started.pid !== undefined) leaveToJanitor({ type: 'process', pid: started.pid });
    let spawnError: Error | undefined;
    started.once('error', (err) => (spawnError = err));
    started.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
      stderrTail.push(...chunk.split('\n').filter((line) => line !== ''));
      stderrTail.splice(0, Math.max(0, stderrTail.length - 10));
    });
    const died = () =>
      new Error(
        `${binary} ${spawnError ? `failed: ${spawnError.message}` : `exited (${started.exitCode ?? started.signalCode})`}` +
          (stderrTail.length ? `: ${stderrTail.join(' | ')}` : ''),
      );

    const readyBy = Date.now() + READY_TIMEOUT_MS;
    for (;;) {
      if (spawnError || !running(started)) throw died();
      if (await answersOk(`${base}/-/ready`, dispatcher)) break;
      if (Date.now() > readyBy)
        throw new Error(`${binary} not ready within ${READY_TIMEOUT_MS} ms`);
      await sleep(POLL_MS);
    }
    const status = await getJson<{ versionInfo?: { version?: string } }>(
      `${base}/api/v2/status`,
      dispatcher,
    );
    const version = status.json?.versionInfo?.version ?? '?';
    say(`alertmanager ${version} (${binary}) on ${base}, ${n.toLocaleString('en-US')} alerts`);

    const countsUrl = `${opts.receiverOrigin}/peer/counts`;
    const counts = async () => {
      const { json } = await getJson<PeerCounts>(countsUrl, dispatcher);
      if (!json) throw new Error(`${countsUrl} did not answer with the peer counters`);
      return json;
    };
    const pid = started.pid!;
    const now = new Date();
    const startsAt = now.toISOString();
    const endsAt = new Date(now.getTime() + 365 * 24 * 3_600_000).toISOString();

    /** Posts alerts `from` … `to` - 1 as a Prometheus server would. */
    const feed = async (from: number, to: number) => {
      let nextAlert = from;
      const feedLane = async () => {
        while (nextAlert < to) {
          const first = nextAlert;
          nextAlert = Math.min(to, first + ALERTS_PER_POST);
          const { statusCode, body } = await request(`${base}/api/v2/alerts`, {
            dispatcher,
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify(stormAlerts(first, nextAlert, startsAt, endsAt)),
          });
          const text = await body.text();
          if (statusCode !== 200) {
            throw new Error(`POST /api/v2/alerts answered ${statusCode}: ${text.slice(0, 300)}`);
          }
        }
      };
      await Promise.all(Array.from({ length: POSTS_IN_FLIGHT }, feedLane));
    };
    /** Waits until `count` more alerts than `since` counted have arrived, or the deadline. */
    const arrived = async (since: PeerCounts, count: number, deadline: number) => {
      let nextProgress = Date.now() + PROGRESS_EVERY_MS;
      for (;;) {
        if (spawnError || !running(started)) throw died();
        const latest = await counts();
        if (latest.alerts - since.alerts >= count) return { latest, complete: true };
        if (Date.now() > deadline) return { latest, complete: false };
        if (Date.now() > nextProgress) {
          say(
            `alertmanager: ${(latest.alerts - since.alerts).toLocaleString('en-US')} alerts arrived`,
          );
          nextProgress += PROGRESS_EVERY_MS;
        }
        await sleep(POLL_MS);
      }
    };

    if (activeBefore > 0) {
      // Other subscribers' alerts (indices past the measured ones), left active.
      const since = await counts();
      await feed(n, n + activeBefore);
      const earlier = await arrived(since, activeBefore, Date.now() + timeoutMs);
      if (!earlier.complete) {
        throw new Error(`alertmanager: the ${activeBefore} earlier alerts did not all arrive`);
      }
      say(`alertmanager: ${n0(activeBefore)} earlier alerts sent and still active`);
    }

    // The receiver may have counted other peer traffic before: only what arrives now counts.
    const before = await counts();
    const firstPostAt = Date.now();
    const peerCpuAtStart = cpuSeconds(pid);
    const feederCpuAtStart = process.cpuUsage();
    await feed(0, n);
    say(`alertmanager: all alerts posted in ${((Date.now() - firstPostAt) / 1000).toFixed(1)} s`);
    const { latest, complete } = await arrived(before, n, firstPostAt + timeoutMs);
    const feederCpu = process.cpuUsage(feederCpuAtStart);
    const peerCpu = cpuSeconds(pid) - peerCpuAtStart;
    const memory = memoryMb(pid).hwm;

    const webhooks = latest.requests - before.requests;
    const alertsReceived = latest.alerts - before.alerts;
    const seconds =
      webhooks > 0 ? (latest.lastAt - firstPostAt) / 1000 : (Date.now() - firstPostAt) / 1000;
    const cpu = { alertmanager: peerCpu, feeder: (feederCpu.user + feederCpu.system) / 1e6 };
    if (!complete) {
      say(
        `alertmanager: only ${alertsReceived} of ${n} alerts arrived within ${timeoutMs} ms` +
          (stderrTail.length ? ` (${stderrTail.at(-1)})` : ''),
      );
    }
    return {
      name: 'alertmanager',
      version,
      binary,
      args,
      config,
      notifications: n,
      activeBefore,
      webhooks,
      alertsReceived,
      complete,
      seconds,
      webhooksPerSecond: seconds > 0 ? webhooks / seconds : 0,
      cpuSeconds: cpu,
      cpuMsPerNotification: ((cpu.alertmanager + cpu.feeder) / n) * 1000,
      memoryMb: memory,
    };
  } finally {
    if (child) await stop(child);
    await dispatcher.close();
    rmSync(dir, { recursive: true, force: true });
    process.off('exit', onExit);
  }
}

const n0 = (v: number) => Math.round(v).toLocaleString('en-US');
const n2 = (v: number) => v.toFixed(2);

/** The median, and each run's figure in run order when there are several. */
const medianOf = (values: readonly number[], show: (v: number) => string): string =>
  values.length === 0
    ? '–'
    : values.length === 1
      ? show(values[0]!)
      : `${show(median(values))} (${values.map(show).join(' / ')})`;

export type MeasuredPeer = Exclude<PeerResult, { skipped: string }>;

/** Our side of the peer table: the webhook storms, one cold and one warm per round. */
export interface OurWebhookStorms {
  /** CPU ms per webhook notification of each round's first storm, fresh workers. */
  coldCpuMs: number[];
  /** The same, of each round's storm after an all clear, in the same workers. */
  warmCpuMs: number[];
  webhooksPerSecond: number[];
  /** CPU ms per notification of the storm of both channels (the main scenarios). */
  bothChannelsCpuMs?: number;
  rowsPerNotification?: number;
}

/**
 * Rows of the table "peer (same receiver, same run) | Alertmanager | qwn": Alertmanager's
 * rounds (fresh processes) interleaved with ours, medians first, each run's figure after; and
 * Alertmanager fed the storm while as many earlier alerts stay active.
 */
export function peerRows(
  rounds: readonly PeerResult[],
  loaded: PeerResult | undefined,
  ours: OurWebhookStorms | undefined,
): { label: string; cells: string[] }[] {
  const skipped = rounds.find((r): r is Extract<PeerResult, { skipped: string }> => 'skipped' in r);
  if (skipped || rounds.length === 0)
    return [{ label: 'Alertmanager', cells: [`skipped: ${skipped?.skipped ?? 'not run'}`, ''] }];
  const measured = rounds as readonly MeasuredPeer[];
  const first = measured[0]!;
  const incomplete = measured.filter((r) => !r.complete);
  const mark = incomplete.length
    ? ` (${incomplete.length} of ${measured.length} runs incomplete)`
    : '';
  const loadedRun = loaded && !('skipped' in loaded) ? loaded : undefined;
  const theirCpuMs = medianOf(
    measured.map((r) => r.cpuMsPerNotification),
    n2,
  );
  return [
    {
      label: 'runs, interleaved',
      cells: [String(measured.length), ours ? String(ours.coldCpuMs.length) : '–'],
    },
    {
      label: 'webhooks/s',
      cells: [
        `${medianOf(
          measured.map((r) => r.webhooksPerSecond),
          n0,
        )}${mark}`,
        ours ? medianOf(ours.webhooksPerSecond, n0) : '–',
      ],
    },
    {
      label: 'CPU ms per webhook notification (all processes), cold',
      cells: [theirCpuMs, ours ? medianOf(ours.coldCpuMs, n2) : '–'],
    },
    {
      // A Go binary compiles nothing as it runs: its fresh runs are its warm ones too.
      label: 'CPU ms per webhook notification, warm (ours: the next storm, same workers)',
      cells: [theirCpuMs, ours ? medianOf(ours.warmCpuMs, n2) : '–'],
    },
    {
      label: 'CPU ms per webhook notification, with a storm of alerts still active',
      cells: [
        loadedRun
          ? `${n2(loadedRun.cpuMsPerNotification)}${loadedRun.complete ? '' : ' (incomplete)'}`
          : '–',
        '–',
      ],
    },
    ...(ours?.bothChannelsCpuMs === undefined
      ? []
      : [
          {
            label: 'CPU ms per notification, storm of both channels',
            cells: ['–', n2(ours.bothChannelsCpuMs)],
          },
        ]),
    ...(ours?.rowsPerNotification === undefined
      ? []
      : [
          {
            label: 'row versions per webhook notification (every table)',
            cells: ['–', ours.rowsPerNotification.toFixed(3)],
          },
        ]),
    {
      label: 'notifications → webhooks (first run)',
      cells: [
        `${n0(first.notifications)} → ${n0(first.webhooks)} in ${first.seconds.toFixed(1)} s`,
        '–',
      ],
    },
    {
      label: 'peak RSS (MB): fresh / with the first storm active',
      cells: [
        `${n0(Math.max(...measured.map((r) => r.memoryMb)))} / ${loadedRun ? n0(loadedRun.memoryMb) : '–'}`,
        '–',
      ],
    },
    { label: 'durable / signed', cells: ['no / no', 'yes / yes'] },
    {
      label: 'setup',
      cells: [
        `${first.version}, group_by ['...'], group_wait 0s, 1 alert a webhook`,
        'the storm, webhook subscribers only; an all clear; a storm of the other half: checks, ledger, sends',
      ],
    },
  ];
}
