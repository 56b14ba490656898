import type { BenchSource } from './data.js';
import type { Limit, Limits, TimedLimit } from './limits.js';
import { median } from './median.js';
import {
  peerRows,
  type MeasuredPeer,
  type OurWebhookStorms,
  type PeerResult,
} from './peer-alertmanager.js';
import type { ScenarioResult } from './scenario.js';

/** The bench's report: one JSON document, a plain-text table and a Markdown table from it. */

export interface BenchReport {
  mode: 'full' | 'quick';
  startedAt: string;
  totalSeconds: number;
  machine: {
    cpus: number;
    cpuModel: string;
    memoryGb: number;
    node: string;
    postgres: string;
    redis: string;
  };
  settings: {
    /** What the workers polled: v7's list and places, or v1's points. */
    source: BenchSource;
    workerProcesses: number;
    /** Node options the worker processes ran with (`--worker-node-args`); none by default. */
    workerNodeArgs?: string[];
    checkConcurrency: number;
    deliveryConcurrency: number;
    qweatherQpm: number;
    places: number;
    subscribers: number;
    subscriptions: number;
    subscriptionsByChannel: { webhook: number; email: number };
  };
  limits: Limits;
  scenarios: ScenarioResult[];
  /** What the storm's two rate targets leave everything but the sends; absent without a storm. */
  rateRoom?: RateRoom;
  /** Peak resident memory of each worker process over the whole run (VmHWM). */
  workerPeakRssMb: number[];
  targets: Target[];
  /** With `--runs N` (N > 1): each target over every run, this one last. */
  series?: TargetSeries[];
  /** With `--peer`: the peer and our webhook storms, in turns on the same receiver. */
  peer?: PeerComparison;
  /** Every correctness check of every scenario passed. */
  correct: boolean;
}

/**
 * Alertmanager against our webhook path, run in turns (issue 38: one sample of each says little;
 * Alertmanager's own CPU per alert varied by a quarter within an hour).
 */
export interface PeerComparison {
  /**
   * Alertmanager, a fresh process each time, fed the storm's webhook notifications; a single
   * skipped result when it could not run.
   */
  rounds: PeerResult[];
  /**
   * Ours after each of those rounds: the storm of the webhook subscribers alone on a fresh
   * database and fresh workers (cold), an all clear, then a storm over the other half of the
   * places in the same workers (warm).
   */
  ours: { cold: ScenarioResult; clear: ScenarioResult; warm: ScenarioResult }[];
  /** Alertmanager once more, fed the storm while as many earlier alerts stay active. */
  loaded?: PeerResult;
}

/** One target of the run: its goal, the figure measured (in `unit`) and whether it was met. */
export interface Target {
  name: string;
  goal: string;
  measured: number;
  unit: string;
  /** Decimals the figure is shown with. */
  digits: number;
  value: string;
  met: boolean;
}

/** One target over several full runs (issue 21: three runs, min–max). */
export interface TargetSeries {
  name: string;
  goal: string;
  values: number[];
  min: string;
  max: string;
  /** Runs that met it. */
  met: number;
  runs: number;
}

/**
 * The storm's two rate targets, worked out on this run's own figures. Each channel's rate is
 * its sends over the time from its first to its last, so meeting both means every send of the
 * storm done within `windowSeconds` of the first. In that window the machine has
 * `windowSeconds` × cores of CPU, and the bare sends of the storm's deliveries (each channel's
 * limit, its CPU per send scaled to the storm's sends) take `bareSendCpuSeconds` of it; the rest
 * is all the checks, ledger, queues, rendering and signing may use. A delivery here is a send:
 * one message (a POST or an email), which may carry several notifications (docs/messages.md).
 */
export interface RateRoom {
  windowSeconds: number;
  machineCpuSeconds: number;
  bareSendCpuSeconds: number;
  /** Machine CPU a delivery may cost beyond its bare send, with both targets met. */
  allowedMsPerDelivery: number;
  /** What the storm spent a delivery beyond the bare send (all of its CPU, from the list call). */
  spentMsPerDelivery: number;
  /**
   * The bare sends' CPU over all the CPU the storm used: reported, no longer a target (issue 38:
   * it says as much about the message mix as about qwn).
   */
  efficiency: number;
}

export const WEBHOOK_RATE_TARGET = 0.4;
export const EMAIL_RATE_TARGET = 0.5;

export function rateRoom(
  scenarios: readonly ScenarioResult[],
  limits: Limits,
  cpus: number,
): RateRoom | undefined {
  const storm = scenarios.find((s) => s.name === 'storm');
  const { undiciPosts, nodemailerSends } = limits;
  if (!storm || undiciPosts.count === 0 || nodemailerSends.count === 0) return undefined;
  // A send is a message: one POST or one email, however many notifications it carries.
  const webhooks = storm.channels.webhook.messagesSent;
  const emails = storm.channels.email.messagesSent;
  const deliveries = webhooks + emails;
  if (deliveries === 0) return undefined;
  const windowSeconds = Math.max(
    webhooks / (WEBHOOK_RATE_TARGET * undiciPosts.perSecond),
    emails / (EMAIL_RATE_TARGET * nodemailerSends.perSecond),
  );
  // Each channel at its own bare cost: an email costs several webhooks, and the storm's mix of
  // messages is not the subscriptions' (emails group), so one blended cost would mislead.
  const bareCost = (l: TimedLimit) => l.cpuSeconds / l.count;
  const bareSendCpuSeconds = webhooks * bareCost(undiciPosts) + emails * bareCost(nodemailerSends);
  const machineCpuSeconds = windowSeconds * cpus;
  const stormCpu = stormCpuSeconds(storm);
  return {
    windowSeconds,
    machineCpuSeconds,
    bareSendCpuSeconds,
    allowedMsPerDelivery: ((machineCpuSeconds - bareSendCpuSeconds) / deliveries) * 1000,
    spentMsPerDelivery: ((stormCpu - bareSendCpuSeconds) / deliveries) * 1000,
    efficiency: stormCpu > 0 ? bareSendCpuSeconds / stormCpu : 0,
  };
}

const ratio = (value: number, limit: number) => (limit > 0 ? value / limit : 0);
const pct = (r: number) => `${(r * 100).toFixed(0)} %`;
const n0 = (v: number) => Math.round(v).toLocaleString('en-US');
const n1 = (v: number) => v.toFixed(1);
const n2 = (v: number) => v.toFixed(2);
const n3 = (v: number) => v.toFixed(3);

/** Our CPU per webhook notification over Alertmanager's, storms in fresh workers (issue 38). */
export const PEER_COLD_RATIO_TARGET = 1.1;
/** The same, for a second storm in workers that have run one. */
export const PEER_WARM_RATIO_TARGET = 1.0;
/** Postgres and Redis CPU per notification, ms. */
export const PG_REDIS_MS_TARGET = 0.08;

function target(
  name: string,
  goal: string,
  measured: number,
  unit: string,
  digits: number,
  met: boolean,
): Target {
  return { name, goal, measured, unit, digits, value: show(measured, unit, digits), met };
}

const show = (v: number, unit: string, digits: number) =>
  `${v.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits })}${unit ? ` ${unit}` : ''}`;

/**
 * The targets: what the design controls (the storm's efficiency and database CPU per
 * notification), and what was met before and must stay met. Row versions per notification are
 * reported beside them, no longer a target (issue 37: CPU per notification is what is judged).
 */
export function judgeTargets(run: {
  scenarios: readonly ScenarioResult[];
  workerPeakRssMb: readonly number[];
  /**
   * The quiet cycle's calls, by operation: v7 lists once and calls for every place, v1 calls for
   * every watched point.
   */
  quietCalls: { warningList: number; warningNow: number } | { weatherAlert: number };
  peer?: PeerComparison | undefined;
}): Target[] {
  const { scenarios, workerPeakRssMb, quietCalls, peer } = run;
  const storm = scenarios.find((s) => s.name === 'storm');
  const quiet = scenarios.find((s) => s.name === 'quiet');
  const targets: Target[] = [];
  if (storm) {
    const each = storm.perNotification;
    if (each) {
      targets.push(
        target(
          'storm Postgres + Redis CPU per notification',
          `≤ ${PG_REDIS_MS_TARGET} ms`,
          each.pgRedisCpuMs,
          'ms',
          3,
          each.pgRedisCpuMs <= PG_REDIS_MS_TARGET,
        ),
      );
    }
    const p99 = storm.channels.webhook.latencySeconds.p99;
    targets.push(
      target('storm cycle', '≤ 60 s', storm.wallSeconds, 's', 1, storm.wallSeconds <= 60),
      target('storm webhook p99 latency', '< 20 s', p99, 's', 1, p99 < 20),
      target(
        'storm delivered exactly once',
        'every notification, once',
        storm.correctness.problems.length,
        'problems',
        0,
        storm.correctness.ok,
      ),
    );
  }
  if (quiet) {
    const extraWrites = quiet.correctness.problems.filter((p) => p.startsWith('quiet')).length;
    targets.push(
      target('quiet cycle', '< 5 s', quiet.wallSeconds, 's', 2, quiet.wallSeconds < 5),
      target(
        'quiet upstream calls',
        'weatherAlert' in quietCalls
          ? `${quietCalls.weatherAlert} points`
          : `${quietCalls.warningList} + ${quietCalls.warningNow}`,
        quiet.upstreamCalls.total,
        'calls',
        0,
        'weatherAlert' in quietCalls
          ? quiet.upstreamCalls.weatherAlert === quietCalls.weatherAlert &&
              quiet.upstreamCalls.total === quietCalls.weatherAlert
          : quiet.upstreamCalls.warningList === quietCalls.warningList &&
              quiet.upstreamCalls.warningNow === quietCalls.warningNow,
      ),
      target(
        'quiet writes: cycle + last-seen only',
        'no other',
        extraWrites,
        'problems',
        0,
        extraWrites === 0,
      ),
    );
  }
  const peak = Math.max(0, ...workerPeakRssMb, ...scenarios.flatMap((s) => s.peakRssMb));
  targets.push(target('worker peak RSS', '< 400 MB', peak, 'MB', 0, peak < 400));
  const figures = peer ? peerFigures(peer) : undefined;
  if (figures) {
    // Ours is all the webhook storm's CPU (its checks and ledger included) over its
    // notifications, as theirs is Alertmanager's and its feeder's over the alerts; each side's
    // median over the runs, both against Alertmanager's fresh runs.
    const theirs = median(figures.peerCpuMs);
    const runs = figures.peerCpuMs.length;
    for (const [kind, ours, goal] of [
      ['cold', figures.ours.coldCpuMs, PEER_COLD_RATIO_TARGET],
      ['warm', figures.ours.warmCpuMs, PEER_WARM_RATIO_TARGET],
    ] as const) {
      const ratioToPeer = median(ours) / theirs;
      targets.push(
        target(
          `CPU per webhook notification, ours ${kind} / Alertmanager's (${runs === 1 ? 'one run each' : `medians of ${runs} runs`})`,
          `≤ ${goal.toFixed(1)} ×`,
          ratioToPeer,
          '×',
          2,
          ratioToPeer <= goal,
        ),
      );
    }
  }
  return targets;
}

/** Each target of the last run over all runs: min–max of the figures, runs that met it. */
export function targetSeries(reports: readonly BenchReport[]): TargetSeries[] {
  const last = reports[reports.length - 1];
  if (!last) return [];
  return last.targets.map((t) => {
    const runs = reports.map((r) => r.targets.find((x) => x.name === t.name));
    const values = runs.flatMap((x) => (x ? [x.measured] : []));
    return {
      name: t.name,
      goal: t.goal,
      values,
      min: show(Math.min(...values), t.unit, t.digits),
      max: show(Math.max(...values), t.unit, t.digits),
      met: runs.filter((x) => x?.met).length,
      runs: reports.length,
    };
  });
}

interface Row {
  label: string;
  cells: string[];
}

function scenarioRows(report: BenchReport): Row[] {
  const { limits } = report;
  const s = report.scenarios;
  const each = (f: (r: ScenarioResult) => string) => s.map(f);
  const lat = (r: ScenarioResult, c: 'webhook' | 'email') => {
    const l = r.channels[c].latencySeconds;
    return r.channels[c].sent ? `${n2(l.p50)} / ${n2(l.p95)} / ${n2(l.p99)}` : '–';
  };
  const fromList = (r: ScenarioResult) => {
    const l = r.channels.webhook.fromListCallSeconds;
    return r.channels.webhook.sent ? `${n2(l.p50)} / ${n2(l.p95)} / ${n2(l.p99)}` : '–';
  };
  const rate = (r: ScenarioResult, c: 'webhook' | 'email', limit: number) =>
    r.channels[c].sent
      ? `${n0(r.channels[c].perSecond)} (${pct(ratio(r.channels[c].perSecond, limit))})`
      : '–';
  return [
    { label: 'wall: list call → last first attempt (s)', cells: each((r) => n2(r.wallSeconds)) },
    { label: 'checks done after (s)', cells: each((r) => n2(r.checksSeconds)) },
    ...(report.settings.source === 'v1'
      ? [
          {
            label: 'points checked / upstream calls (alerts at a point)',
            cells: each((r) => `${n0(r.checked)} / ${n0(r.upstreamCalls.weatherAlert)}`),
          },
        ]
      : [
          {
            label: 'listed / checked',
            cells: each((r) => `${n0(r.listed)} / ${n0(r.checked)}`),
          },
          {
            label: 'upstream calls (list + now)',
            cells: each(
              (r) => `${r.upstreamCalls.warningList} + ${n0(r.upstreamCalls.warningNow)}`,
            ),
          },
        ]),
    {
      label: 'events new / update / cancel / expired',
      cells: each(
        (r) => `${r.events.new} / ${r.events.update} / ${r.events.cancel} / ${r.events.expired}`,
      ),
    },
    {
      label: 'webhook notifications / messages sent',
      cells: each((r) => `${n0(r.channels.webhook.sent)} / ${n0(r.channels.webhook.messagesSent)}`),
    },
    {
      label: 'email notifications / messages sent',
      cells: each((r) => `${n0(r.channels.email.sent)} / ${n0(r.channels.email.messagesSent)}`),
    },
    {
      label: 'webhooks/s (of raw undici)',
      cells: each((r) => rate(r, 'webhook', limits.undiciPosts.perSecond)),
    },
    {
      label: 'emails/s (of raw nodemailer)',
      cells: each((r) => rate(r, 'email', limits.nodemailerSends.perSecond)),
    },
    {
      // Compared with no-op jobs: what one job per message could reach at best.
      label: 'deliveries/s, both channels (of raw BullMQ no-op jobs)',
      cells: each((r) =>
        r.deliveriesPerSecond
          ? `${n0(r.deliveriesPerSecond)} (${pct(ratio(r.deliveriesPerSecond, limits.bullmqNoopJobs.perSecond))})`
          : '–',
      ),
    },
    { label: 'webhook latency p50 / p95 / p99 (s)', cells: each((r) => lat(r, 'webhook')) },
    {
      // Reported beside the judged figure: it includes the wait for the place's check.
      label: 'webhook latency from the list call p50 / p95 / p99 (s)',
      cells: each(fromList),
    },
    { label: 'email latency p50 / p95 / p99 (s)', cells: each((r) => lat(r, 'email')) },
    {
      label: 'CPU s: workers / runner+sinks / pg (of it vacuum) / redis',
      cells: each(
        (r) =>
          `${r.cpuSeconds.workers.map(n1).join('+')} / ${n1(r.cpuSeconds.runner)} / ${n1(r.cpuSeconds.postgres)} (${n1(r.cpuSeconds.vacuum)}) / ${n1(r.cpuSeconds.redis)}`,
      ),
    },
    { label: 'peak RSS per worker (MB)', cells: each((r) => r.peakRssMb.map(n0).join(' / ')) },
    {
      label: 'rows written (ins+upd+del)',
      cells: each((r) => n0(r.rowsWritten.total)),
    },
    {
      label: 'rows written/s (of raw batched insert)',
      cells: each(
        (r) =>
          `${n0(r.rowsWritten.perSecond)} (${pct(ratio(r.rowsWritten.perSecond, limits.postgresInsertRows.perSecond))})`,
      ),
    },
    { label: 'Postgres transactions', cells: each((r) => n0(r.postgresTransactions)) },
    {
      // Per notification, whatever message carries it: what the ledger's shape controls.
      label: 'per notification: rows (ledger) / WAL bytes / Redis commands / pg+redis CPU (ms)',
      cells: each((r) => {
        const p = r.perNotification;
        if (!p) return '–';
        return `${n2(p.rows)} (${n2(p.ledgerRows)}) / ${n0(p.walBytes)} / ${n1(p.redisCommands)} / ${n3(p.pgRedisCpuMs)}`;
      }),
    },
    { label: 'Redis commands', cells: each((r) => n0(r.redisCommands.total)) },
    {
      // pg_stat_wal is the server's: other databases' transactions would be in the WAL figure.
      label: "other databases' transactions meanwhile (WAL is counted server-wide)",
      cells: each((r) => n0(r.otherDatabasesTransactions)),
    },
    {
      label: 'Postgres busy backends: top waits',
      cells: each((r) => {
        const total = Object.values(r.postgresActivity).reduce((a, b) => a + b, 0);
        return Object.entries(r.postgresActivity)
          .sort((a, b) => b[1] - a[1])
          .slice(0, 2)
          .map(([what, n]) => `${what.replace(/^.*:/, '')} ${pct(n / total)}`)
          .join(', ');
      }),
    },
    { label: 'correct', cells: each((r) => (r.correctness.ok ? 'yes' : 'NO')) },
  ];
}

function limitRows(limits: Limits): Row[] {
  const row = (label: string, l: Limit, unit: string) => ({
    label,
    cells: [
      `${n0(l.perSecond)} ${unit}/s`,
      `${n0(l.count)} in ${n2(l.seconds)} s${l.errors ? `, ${l.errors} errors` : ''}`,
    ],
  });
  const both = limits.bothChannels;
  return [
    row('BullMQ no-op jobs', limits.bullmqNoopJobs, 'jobs'),
    row('undici POSTs to the receiver', limits.undiciPosts, 'req'),
    row('pooled nodemailer sends', limits.nodemailerSends, 'msg'),
    row(
      `undici POSTs, with nodemailer at once (${pct(ratio(both.webhook.perSecond, limits.undiciPosts.perSecond))})`,
      both.webhook,
      'req',
    ),
    row(
      `nodemailer sends, with undici at once (${pct(ratio(both.email.perSecond, limits.nodemailerSends.perSecond))})`,
      both.email,
      'msg',
    ),
    row('batched Postgres inserts', limits.postgresInsertRows, 'rows'),
  ];
}

function rateRoomRows(room: RateRoom): Row[] {
  return [
    {
      label: 'every storm send done within (s)',
      cells: [n1(room.windowSeconds)],
    },
    {
      label: 'machine CPU in that time / bare sends need (s)',
      cells: [`${n1(room.machineCpuSeconds)} / ${n1(room.bareSendCpuSeconds)}`],
    },
    {
      label: 'CPU a delivery may cost beyond its send (ms)',
      cells: [n2(room.allowedMsPerDelivery)],
    },
    {
      label: 'CPU the storm spent a delivery beyond its send (ms)',
      cells: [n2(room.spentMsPerDelivery)],
    },
    {
      label: 'efficiency: bare sends / all CPU of the storm',
      cells: [pct(room.efficiency)],
    },
  ];
}

function textTable(header: string[], rows: Row[]): string {
  const all = [header, ...rows.map((r) => [r.label, ...r.cells])];
  const widths = header.map((_, i) => Math.max(...all.map((r) => [...(r[i] ?? '')].length)));
  const line = (r: string[]) =>
    r.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  return [
    line(header),
    widths.map((w) => '-'.repeat(w)).join('  '),
    ...all.slice(1).map(line),
  ].join('\n');
}

function markdownTable(header: string[], rows: Row[]): string {
  const escape = (c: string) => c.replace(/\|/g, '\\|');
  return [
    `| ${header.map(escape).join(' | ')} |`,
    `|${header.map((_, i) => (i === 0 ? ' --- ' : ' ---: ')).join('|')}|`,
    ...rows.map((r) => `| ${[r.label, ...r.cells].map(escape).join(' | ')} |`),
  ].join('\n');
}

function targetRows(targets: readonly Target[]): Row[] {
  return targets.map((t) => ({
    label: t.name,
    cells: [t.goal, t.value, t.met ? 'met' : 'MISSED'],
  }));
}

function figureRows(targets: readonly Target[]): Row[] {
  return targets.map((t) => ({ label: t.name, cells: [t.value] }));
}

function settingsLine(r: BenchReport): string {
  const s = r.settings;
  return (
    `${r.mode} run${s.source === 'v1' ? ' (v1 source)' : ''}, ${r.startedAt}: ` +
    `${n0(s.places)} places, ${n0(s.subscribers)} subscribers, ` +
    `${n0(s.subscriptions)} subscriptions (${n0(s.subscriptionsByChannel.webhook)} webhook, ` +
    `${n0(s.subscriptionsByChannel.email)} email); ${s.workerProcesses} worker processes ` +
    (s.workerNodeArgs?.length ? `(node ${s.workerNodeArgs.join(' ')}) ` : '') +
    `(check concurrency ${s.checkConcurrency}, delivery concurrency ${s.deliveryConcurrency}); ` +
    `${r.machine.cpus} × ${r.machine.cpuModel}, ${r.machine.memoryGb} GB, Node ${r.machine.node}, ` +
    `${r.machine.postgres}, Redis ${r.machine.redis}`
  );
}

function seriesRows(series: readonly TargetSeries[]): Row[] {
  return series.map((t) => ({
    label: t.name,
    cells: [
      t.goal,
      t.min === t.max ? t.min : `${t.min} – ${t.max}`,
      t.met === t.runs ? 'met' : t.met === 0 ? 'MISSED' : `met in ${t.met} of ${t.runs}`,
    ],
  }));
}

/** The report's tables after the scenarios', each a header and its rows. */
function sections(r: BenchReport): [string[], Row[]][] {
  const storm = r.scenarios.find((s) => s.name === 'storm');
  const figures = r.peer ? peerFigures(r.peer) : undefined;
  const ours = figures && {
    ...figures.ours,
    ...(storm?.perNotification ? { bothChannelsCpuMs: cpuMsPerNotification(storm) } : {}),
  };
  return [
    [['limit (same run)', 'rate', 'measured'], limitRows(r.limits)],
    // The targets are set for the full size: a quick run shows the same figures, not judged.
    r.mode === 'quick'
      ? [['figure (quick run: not judged at this size)', 'value'], figureRows(r.targets)]
      : [['target (this run)', 'goal', 'value', ''], targetRows(r.targets)],
    ...(r.series
      ? [
          [
            [`target over ${r.series[0]?.runs ?? 0} full runs`, 'goal', 'min – max', ''],
            seriesRows(r.series),
          ] as [string[], Row[]],
        ]
      : []),
    ...(r.rateRoom
      ? [
          [['both storm rate targets met (same run)', ''], rateRoomRows(r.rateRoom)] as [
            string[],
            Row[],
          ],
        ]
      : []),
    ...(r.peer
      ? [
          [
            ['peer (same receiver, same run, in turns)', 'Alertmanager', 'qwn'],
            peerRows(r.peer.rounds, r.peer.loaded, ours),
          ] as [string[], Row[]],
        ]
      : []),
  ];
}

/**
 * Each side's figures per run, when both sides ran: Alertmanager's fresh runs and our webhook
 * storms (the row versions are the first cold storm's).
 */
function peerFigures(
  peer: PeerComparison,
): { peerCpuMs: number[]; ours: OurWebhookStorms } | undefined {
  const measured = peer.rounds.filter((p): p is MeasuredPeer => !('skipped' in p));
  const storms = peer.ours.filter(
    (o) => notificationsOf(o.cold) > 0 && notificationsOf(o.warm) > 0,
  );
  if (measured.length === 0 || storms.length === 0) return undefined;
  const rows = storms[0]!.cold.perNotification?.rows;
  return {
    peerCpuMs: measured.map((p) => p.cpuMsPerNotification),
    ours: {
      coldCpuMs: storms.map((o) => cpuMsPerNotification(o.cold)),
      warmCpuMs: storms.map((o) => cpuMsPerNotification(o.warm)),
      webhooksPerSecond: storms.map((o) => o.cold.channels.webhook.perSecond),
      ...(rows === undefined ? {} : { rowsPerNotification: rows }),
    },
  };
}

/** All the CPU a scenario used: workers, runner and sinks, Postgres, Redis. */
export function stormCpuSeconds(s: ScenarioResult): number {
  const c = s.cpuSeconds;
  return c.workers.reduce((a, b) => a + b, 0) + c.runner + c.postgres + c.redis;
}

const notificationsOf = (s: ScenarioResult) => s.channels.webhook.sent + s.channels.email.sent;

/** All the CPU of a scenario (`stormCpuSeconds`) per notification it delivered, in ms. */
const cpuMsPerNotification = (s: ScenarioResult) =>
  (stormCpuSeconds(s) / notificationsOf(s)) * 1000;

export function formatText(r: BenchReport): string {
  const header = ['', ...r.scenarios.map((s) => s.name)];
  const problems = r.scenarios.flatMap((s) =>
    s.correctness.problems.map((p) => `  ${s.name}: ${p}`),
  );
  return [
    settingsLine(r),
    '',
    textTable(header, scenarioRows(r)),
    ...sections(r).flatMap(([head, rows]) => ['', textTable(head, rows)]),
    ...(problems.length ? ['', 'correctness problems:', ...problems] : []),
    '',
  ].join('\n');
}

export function formatMarkdown(r: BenchReport): string {
  const header = ['', ...r.scenarios.map((s) => s.name)];
  return [
    settingsLine(r),
    '',
    markdownTable(header, scenarioRows(r)),
    ...sections(r).flatMap(([head, rows]) => ['', markdownTable(head, rows)]),
  ].join('\n');
}

/** One full run's targets, as BENCHMARKS.md keeps the last three (older ones: the git log). */
export interface RecentRun {
  startedAt: string;
  targets: Target[];
}

export const RECENT_RUNS_KEPT = 3;

/**
 * The targets of the last full runs side by side, newest first: a target a run did not have
 * (it was added later) shows as a dash.
 */
export function formatRecentTargets(runs: readonly RecentRun[]): string {
  const newest = [...runs].sort((a, b) => b.startedAt.localeCompare(a.startedAt));
  const latest = newest[0];
  if (!latest) return '';
  const header = [
    'target',
    'goal',
    ...newest.map((r) => r.startedAt.slice(0, 16).replace('T', ' ')),
  ];
  const rows: Row[] = latest.targets.map((t) => ({
    label: t.name,
    cells: [
      t.goal,
      ...newest.map((r) => {
        const then = r.targets.find((x) => x.name === t.name);
        return then ? `${then.value}${then.met ? '' : ' MISSED'}` : '–';
      }),
    ],
  }));
  return markdownTable(header, rows);
}
