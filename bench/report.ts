import type { Limit, Limits } from './limits.js';
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
    workerProcesses: number;
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
  /** Every correctness check of every scenario passed. */
  correct: boolean;
}

export interface Target {
  name: string;
  goal: string;
  value: string;
  met: boolean;
}

/**
 * The storm's two rate targets, worked out on this run's own figures. Each channel's rate is
 * its sends over the time from its first to its last, so meeting both means every send of the
 * storm done within `windowSeconds` of the first. In that window the machine has
 * `windowSeconds` × cores of CPU, and the bare sends of the storm's deliveries (the
 * both-channel limit, scaled to the storm's counts) take `bareSendCpuSeconds` of it; the rest
 * is all the checks, ledger, queues, rendering and signing may use. A delivery here is a send:
 * one message (a POST or an email), which may carry several notifications (INTERFACE §6).
 */
export interface RateRoom {
  windowSeconds: number;
  machineCpuSeconds: number;
  bareSendCpuSeconds: number;
  /** Machine CPU a delivery may cost beyond its bare send, with both targets met. */
  allowedMsPerDelivery: number;
  /** What the storm spent a delivery beyond the bare send (all of its CPU, from the list call). */
  spentMsPerDelivery: number;
  /** The bare sends' CPU over all the CPU the storm used (issue 21's efficiency). */
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
  const both = limits.bothChannels;
  if (!storm || both.webhook.count + both.email.count === 0) return undefined;
  // A send is a message: one POST or one email, however many notifications it carries.
  const webhooks = storm.channels.webhook.messagesSent;
  const emails = storm.channels.email.messagesSent;
  const deliveries = webhooks + emails;
  if (deliveries === 0) return undefined;
  const windowSeconds = Math.max(
    webhooks / (WEBHOOK_RATE_TARGET * limits.undiciPosts.perSecond),
    emails / (EMAIL_RATE_TARGET * limits.nodemailerSends.perSecond),
  );
  const bareCpuPerDelivery = both.cpuSeconds / (both.webhook.count + both.email.count);
  const bareSendCpuSeconds = bareCpuPerDelivery * deliveries;
  const machineCpuSeconds = windowSeconds * cpus;
  const c = storm.cpuSeconds;
  const stormCpu = c.workers.reduce((a, b) => a + b, 0) + c.runner + c.postgres + c.redis;
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

export function judgeTargets(
  scenarios: readonly ScenarioResult[],
  limits: Limits,
  workerPeakRssMb: readonly number[],
  places: number,
): Target[] {
  const storm = scenarios.find((s) => s.name === 'storm');
  const quiet = scenarios.find((s) => s.name === 'quiet');
  const targets: Target[] = [];
  if (storm) {
    const web = ratio(storm.channels.webhook.perSecond, limits.undiciPosts.perSecond);
    const mail = ratio(storm.channels.email.perSecond, limits.nodemailerSends.perSecond);
    targets.push(
      {
        name: 'storm webhook rate',
        goal: `≥ ${pct(WEBHOOK_RATE_TARGET)} of raw undici`,
        value: `${n0(storm.channels.webhook.perSecond)}/s = ${pct(web)}`,
        met: web >= WEBHOOK_RATE_TARGET,
      },
      {
        name: 'storm email rate',
        goal: `≥ ${pct(EMAIL_RATE_TARGET)} of raw nodemailer`,
        value: `${n0(storm.channels.email.perSecond)}/s = ${pct(mail)}`,
        met: mail >= EMAIL_RATE_TARGET,
      },
      {
        name: 'storm cycle',
        goal: '≤ 60 s',
        value: `${n1(storm.wallSeconds)} s`,
        met: storm.wallSeconds <= 60,
      },
      {
        name: 'storm webhook p99 latency',
        goal: '< 20 s',
        value: `${n1(storm.channels.webhook.latencySeconds.p99)} s`,
        met: storm.channels.webhook.latencySeconds.p99 < 20,
      },
    );
  }
  if (quiet) {
    targets.push(
      {
        name: 'quiet cycle',
        goal: '< 5 s',
        value: `${n2(quiet.wallSeconds)} s`,
        met: quiet.wallSeconds < 5,
      },
      {
        name: 'quiet upstream calls',
        goal: `1 + ${places}`,
        value: `${quiet.upstreamCalls.warningList} + ${quiet.upstreamCalls.warningNow}`,
        met: quiet.upstreamCalls.warningList === 1 && quiet.upstreamCalls.warningNow === places,
      },
      {
        name: 'quiet writes',
        goal: 'cycle + last-seen only',
        value: quiet.correctness.problems.some((p) => p.startsWith('quiet'))
          ? 'more'
          : 'as required',
        met: !quiet.correctness.problems.some((p) => p.startsWith('quiet')),
      },
    );
  }
  const peak = Math.max(0, ...workerPeakRssMb, ...scenarios.flatMap((s) => s.peakRssMb));
  targets.push({
    name: 'worker peak RSS',
    goal: '< 400 MB',
    value: `${n0(peak)} MB`,
    met: peak < 400,
  });
  return targets;
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
  const rate = (r: ScenarioResult, c: 'webhook' | 'email', limit: number) =>
    r.channels[c].sent
      ? `${n0(r.channels[c].perSecond)} (${pct(ratio(r.channels[c].perSecond, limit))})`
      : '–';
  return [
    { label: 'wall: list call → last first attempt (s)', cells: each((r) => n2(r.wallSeconds)) },
    { label: 'checks done after (s)', cells: each((r) => n2(r.checksSeconds)) },
    { label: 'listed / checked', cells: each((r) => `${n0(r.listed)} / ${n0(r.checked)}`) },
    {
      label: 'upstream calls (list + now)',
      cells: each((r) => `${r.upstreamCalls.warningList} + ${n0(r.upstreamCalls.warningNow)}`),
    },
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
    { label: 'email latency p50 / p95 / p99 (s)', cells: each((r) => lat(r, 'email')) },
    {
      label: 'CPU s: workers / runner+sinks / pg / redis',
      cells: each(
        (r) =>
          `${r.cpuSeconds.workers.map(n1).join('+')} / ${n1(r.cpuSeconds.runner)} / ${n1(r.cpuSeconds.postgres)} / ${n1(r.cpuSeconds.redis)}`,
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
      label: 'per notification: rows / WAL bytes / Redis commands / pg+redis CPU (ms)',
      cells: each((r) => {
        const n = r.channels.webhook.sent + r.channels.email.sent;
        if (n === 0) return '–';
        const dbMs = ((r.cpuSeconds.postgres + r.cpuSeconds.redis) / n) * 1000;
        return `${n2(r.rowsWritten.total / n)} / ${n0(r.walBytes / n)} / ${n1(r.redisCommands.total / n)} / ${n2(dbMs)}`;
      }),
    },
    { label: 'Redis commands', cells: each((r) => n0(r.redisCommands.total)) },
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

function settingsLine(r: BenchReport): string {
  const s = r.settings;
  return (
    `${r.mode} run, ${r.startedAt}: ${n0(s.places)} places, ${n0(s.subscribers)} subscribers, ` +
    `${n0(s.subscriptions)} subscriptions (${n0(s.subscriptionsByChannel.webhook)} webhook, ` +
    `${n0(s.subscriptionsByChannel.email)} email); ${s.workerProcesses} worker processes ` +
    `(check concurrency ${s.checkConcurrency}, delivery concurrency ${s.deliveryConcurrency}); ` +
    `${r.machine.cpus} × ${r.machine.cpuModel}, ${r.machine.memoryGb} GB, Node ${r.machine.node}, ` +
    `${r.machine.postgres}, Redis ${r.machine.redis}`
  );
}

export function formatText(r: BenchReport): string {
  const header = ['', ...r.scenarios.map((s) => s.name)];
  const problems = r.scenarios.flatMap((s) =>
    s.correctness.problems.map((p) => `  ${s.name}: ${p}`),
  );
  return [
    settingsLine(r),
    '',
    textTable(header, scenarioRows(r)),
    '',
    textTable(['limit (same run)', 'rate', 'measured'], limitRows(r.limits)),
    '',
    textTable(['target', 'goal', 'value', ''], targetRows(r.targets)),
    ...(r.rateRoom
      ? ['', textTable(['both storm rate targets met (same run)', ''], rateRoomRows(r.rateRoom))]
      : []),
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
    '',
    markdownTable(['limit (same run)', 'rate', 'measured'], limitRows(r.limits)),
    '',
    markdownTable(['target', 'goal', 'value', ''], targetRows(r.targets)),
    ...(r.rateRoom
      ? [
          '',
          markdownTable(['both storm rate targets met (same run)', ''], rateRoomRows(r.rateRoom)),
        ]
      : []),
  ].join('\n');
}
