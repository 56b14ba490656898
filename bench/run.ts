import { mkdirSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import os from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import pg from 'pg';
import { loadPlacesFromCsv, startSimulator } from '../src/simulator/index.js';
import {
  FULL_SIZE,
  QUICK_SIZE,
  ENGLISH_SHARE,
  generateData,
  scenarioStates,
  watchersByCheck,
  webhookSubscribersOnly,
  type BenchData,
  type BenchSource,
} from './data.js';
import { FULL_LIMIT_SIZES, QUICK_LIMIT_SIZES, measureLimits } from './limits.js';
import { openPipeline, type BenchPipeline } from './pipeline.js';
import { REPO_ROOT, memoryMb, releaseJanitor, startJanitor } from './procs.js';
import { runAlertmanagerPeer } from './peer-alertmanager.js';
import {
  formatMarkdown,
  formatRecentTargets,
  formatText,
  RECENT_RUNS_KEPT,
  type RecentRun,
  judgeTargets,
  rateRoom,
  targetSeries,
  type BenchReport,
  type PeerComparison,
} from './report.js';
import { startPrivateRedis } from './redis-server.js';
import { adoptV1Points, runScenario, type ScenarioResult } from './scenario.js';
import { startBenchReceiver, startBenchSmtp } from './sinks.js';

/**
 * `npm run bench`: a national storm on the real pipeline (worker processes, Postgres, Redis,
 * the simulator, a signature-checking webhook receiver, an SMTP server), each figure paired
 * with this machine's limits measured in the same run. See BENCHMARKS.md.
 */

const USAGE = `usage: npm run bench -- [--quick] [--runs N] [--peer alertmanager] [--peer-runs N] [--source v7|v1]
       [--workers N] [--out FILE] [--no-md] [--check-concurrency N] [--delivery-concurrency N] [--cpu-prof]
       [--worker-node-args="--max-semi-space-size=N ..."]
       [--log-level L] [--pg URL] [--redis URL] [--places DIR] [--english SHARE] [--keep]
       npm run bench -- --compare REF [--runs N] [--quick] [--workers N] [--source v7|v1] [...]`;

const { values: args } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    runs: { type: 'string', default: '1' },
    peer: { type: 'string' },
    'peer-runs': { type: 'string' },
    source: { type: 'string', default: 'v7' },
    workers: { type: 'string', default: '2' },
    out: { type: 'string' },
    'no-md': { type: 'boolean', default: false },
    'check-concurrency': { type: 'string' },
    'delivery-concurrency': { type: 'string' },
    'cpu-prof': { type: 'boolean', default: false },
    // Node's own options for the worker processes (V8 flags such as --max-semi-space-size=N),
    // given with '=': a value that starts with a dash is otherwise taken for an option.
    'worker-node-args': { type: 'string', default: '' },
    'log-level': { type: 'string', default: 'info' },
    pg: { type: 'string', default: 'postgres://postgres@127.0.0.1:5432/postgres' },
    // Unset: a redis-server of the bench's own when one is on PATH, else 127.0.0.1:6379.
    redis: { type: 'string' },
    places: { type: 'string', default: resolve(REPO_ROOT, '../shared/data/qweather') },
    keep: { type: 'boolean', default: false },
    // 0 measures the pipeline without the calls in English, which are extra and counted apart.
    english: { type: 'string', default: String(ENGLISH_SHARE) },
    help: { type: 'boolean', default: false },
    compare: { type: 'string' },
  },
  strict: true,
});
if (args.help) {
  console.log(USAGE);
  process.exit(0);
}

if (args.compare !== undefined) {
  // Both commits' benches with the same options, the places of this checkout's data.
  const passed = process.argv
    .slice(2)
    .filter((a, i, all) => !['--compare', '--runs', '--out'].includes(all[i - 1] ?? ''))
    .filter((a) => !['--compare', '--runs', '--out', '--no-md'].includes(a));
  if (!passed.includes('--places')) passed.push('--places', args.places);
  const rounds = Number(args.runs);
  if (!Number.isInteger(rounds) || rounds < 1 || rounds > 10)
    throw new Error(`--runs: ${args.runs}`);
  const { compareWith } = await import('./compare.js');
  console.log(await compareWith(args.compare, rounds, passed));
  process.exit(0);
}

const quick = args.quick;
const workerCount = Number(args.workers);
if (!Number.isInteger(workerCount) || workerCount < 1)
  throw new Error(`--workers: ${args.workers}`);
const runs = Number(args.runs);
if (!Number.isInteger(runs) || runs < 1 || runs > 10) throw new Error(`--runs: ${args.runs}`);
const englishShare = Number(args.english);
if (!(englishShare >= 0 && englishShare <= 1)) throw new Error(`--english: ${args.english}`);
if (args.peer !== undefined && args.peer !== 'alertmanager') {
  throw new Error(`--peer: ${args.peer} (the one peer measured is alertmanager)`);
}
// Three in turns at full size (issue 38); one in a quick run, which judges nothing.
const peerRuns = Number(args['peer-runs'] ?? (quick ? 1 : 3));
if (!Number.isInteger(peerRuns) || peerRuns < 1 || peerRuns > 10) {
  throw new Error(`--peer-runs: ${args['peer-runs']}`);
}
if (args.source !== 'v7' && args.source !== 'v1') {
  throw new Error(`--source: ${args.source} (v7, the default, or v1)`);
}
const source: BenchSource = args.source;
const workerNodeArgs = args['worker-node-args'].split(/\s+/).filter((a) => a !== '');
// The latest full run of each source has a file of its own; BENCHMARKS.md's table is v7's.
const outFile = resolve(
  args.out ??
    (quick
      ? join(os.tmpdir(), `qwn-bench-quick${source === 'v1' ? '-v1' : ''}.json`)
      : join(REPO_ROOT, `bench/results/latest${source === 'v1' ? '-v1' : ''}.json`)),
);
const say = (line: string) => console.error(`bench: ${line}`);

async function versions(stats: pg.Client, redis: Redis, ownRedis: boolean) {
  // The server's settings that change what a storm costs it: without autovacuum every sent
  // mark's old row version stays, with a small buffer pool the ledger soon outgrows it.
  const { rows } = await stats.query<{ v: string; autovacuum: string; buffers: string }>(
    `SELECT current_setting('server_version') AS v, current_setting('autovacuum') AS autovacuum,
       current_setting('shared_buffers') AS buffers`,
  );
  const info = await redis.info('server');
  const version = /^redis_version:(\S+)/m.exec(info)?.[1] ?? '?';
  return {
    postgres: `Postgres ${rows[0]?.v ?? '?'} (autovacuum ${rows[0]?.autovacuum ?? '?'}, shared_buffers ${rows[0]?.buffers ?? '?'})`,
    redis: ownRedis ? `${version} (the bench's own)` : `${version} (shared: server-wide counters)`,
  };
}

/** `text` with what lies between the markers `<!-- bench:NAME:start -->` and `…:end -->` replaced. */
function between(text: string, name: string, markdown: string): string {
  const start = `<!-- bench:${name}:start -->`;
  const end = `<!-- bench:${name}:end -->`;
  const from = text.indexOf(start);
  const to = text.indexOf(end);
  if (from === -1 || to === -1)
    throw new Error(`BENCHMARKS.md lacks the ${start} … ${end} markers`);
  return `${text.slice(0, from + start.length)}\n${markdown}\n${text.slice(to)}`;
}

/**
 * The latest full run's tables, and at the top the targets of the last three full runs
 * (bench/results/recent-targets.json; older runs are in the git log).
 */
async function updateBenchmarksMd(report: BenchReport): Promise<void> {
  const recentFile = join(REPO_ROOT, 'bench/results/recent-targets.json');
  const earlier = JSON.parse(await readFile(recentFile, 'utf8').catch(() => '[]')) as RecentRun[];
  const recent = [...earlier, { startedAt: report.startedAt, targets: report.targets }]
    .sort((a, b) => a.startedAt.localeCompare(b.startedAt))
    .slice(-RECENT_RUNS_KEPT);
  await writeFile(recentFile, `${JSON.stringify(recent, null, 2)}\n`);
  const file = join(REPO_ROOT, 'BENCHMARKS.md');
  const text = await readFile(file, 'utf8');
  const updated = between(
    between(text, 'latest', formatMarkdown(report)),
    'recent',
    formatRecentTargets(recent),
  );
  // The repository's check runs prettier over every file: write what it would.
  const prettier = await import('prettier');
  const options = (await prettier.resolveConfig(file)) ?? {};
  await writeFile(file, await prettier.format(updated, { ...options, filepath: file }));
}

/** One whole run: its own database, data, limits, workers and scenarios. */
async function runOnce(): Promise<BenchReport> {
  const started = Date.now();
  const size = quick ? QUICK_SIZE : FULL_SIZE;
  const ownRedis = args.redis === undefined ? await startPrivateRedis() : null;
  const redisUrl = args.redis ?? ownRedis?.url ?? 'redis://127.0.0.1:6379';
  say(
    ownRedis
      ? `Redis: the bench's own redis-server on ${redisUrl}`
      : `Redis: ${redisUrl}, shared: its CPU and command counters are the whole server's`,
  );
  const redis = new Redis(redisUrl, { maxRetriesPerRequest: null });
  const receiver = await startBenchReceiver();
  const smtp = await startBenchSmtp();
  const allPlaces = await loadPlacesFromCsv(args.places);
  const sim = await startSimulator({ places: allPlaces });
  const pipelines: BenchPipeline[] = [];
  const open = async (data: BenchData) => {
    const pipeline = await openPipeline({
      serverUrl: args.pg,
      redisUrl,
      redis,
      upstreamUrl: sim.url,
      smtpUrl: smtp.url,
      webhookOrigin: receiver.origin,
      logLevel: args['log-level'],
      checkConcurrency: args['check-concurrency'],
      deliveryConcurrency: args['delivery-concurrency'],
      source,
      data,
      keep: args.keep,
      say,
    });
    pipelines.push(pipeline);
    return pipeline;
  };

  let cleaning: Promise<void> | undefined;
  const cleanup = () =>
    (cleaning ??= (async () => {
      await Promise.allSettled(pipelines.map((p) => p.close()));
      redis.disconnect();
      await Promise.allSettled([sim.close(), receiver.close(), smtp.close(), ownRedis?.close()]);
    })());
  // Interrupted, the run still drops its databases and its Redis keys.
  const interrupted = () => {
    say('interrupted, cleaning up');
    void cleanup().finally(() => {
      releaseJanitor();
      process.exit(130);
    });
  };
  process.once('SIGINT', interrupted);
  process.once('SIGTERM', interrupted);

  try {
    const data: BenchData = generateData(allPlaces.places, size, englishShare);
    const main = await open(data);
    say(
      `inserted ${data.places.length} places, ${data.subscribers.length} subscribers, ` +
        `${data.subscriptionCount} subscriptions in ${((Date.now() - started) / 1000).toFixed(1)} s`,
    );

    say('measuring the limits of this machine');
    const limits = await measureLimits(
      {
        processes: workerCount,
        emailsPerWebhook: data.subscriptionsByChannel.email / data.subscriptionsByChannel.webhook,
        deliveryConcurrency: main.config.deliveryConcurrency,
        redis,
        redisUrl,
        databaseUrl: main.database.url,
        receiverOrigin: receiver.origin,
        smtpUrl: smtp.url,
        env: { TZ: 'UTC' },
      },
      quick ? QUICK_LIMIT_SIZES : FULL_LIMIT_SIZES,
    );

    const profileDir = join(REPO_ROOT, 'bench/results');
    if (args['cpu-prof']) mkdirSync(profileDir, { recursive: true });
    const nodeArgs = [
      ...workerNodeArgs,
      ...(args['cpu-prof'] ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : []),
    ];
    const workerPids = await main.startWorkers(workerCount, { nodeArgs, logName: 'worker' });
    say(`${workerCount} worker processes ready (logs in ${os.tmpdir()}/qwn-bench-worker-*.log)`);

    const states = scenarioStates(data, new Date());
    const envOf = (pipeline: BenchPipeline, d: BenchData, pids: readonly number[]) => ({
      ctx: pipeline.runtime.ctx,
      stats: pipeline.stats,
      activity: pipeline.activity,
      redis,
      sim,
      receiver,
      smtp,
      data: d,
      source,
      watchers: watchersByCheck(d, source),
      subscriberIds: pipeline.subscriberIds,
      workerPids: pids,
      told: new Set<string>(),
      // Quick runs share the machine with the other test files in CI: a slow cycle is not a failure.
      timeoutMs: quick ? 150_000 : 20 * 60_000,
    });
    const mainEnv = envOf(main, data, workerPids);
    if (source === 'v1') {
      say('v1: a cycle without alerts, so that every point has taken over from v7');
      await adoptV1Points(mainEnv);
    }
    const scenarios: ScenarioResult[] = [];
    for (const name of ['storm', 'escalation', 'quiet'] as const) {
      say(`${name} cycle`);
      const result = await runScenario(mainEnv, name, states[name]);
      say(`${name}: ${summary(result)}`);
      scenarios.push(result);
    }
    // Every warning cancelled, then a storm over the other half: the storm's work again, in
    // workers that have compiled it.
    for (const [name, state] of [
      ['all clear', states.allClearAfterEscalation],
      ['warm storm', states.warmStorm],
    ] as const) {
      say(`${name} cycle`);
      const result = await runScenario(mainEnv, name, state);
      say(`${name}: ${summary(result)}`);
      scenarios.push(result);
    }
    const workerPeakRssMb = workerPids.map((pid) => memoryMb(pid).hwm);
    const versionsOf = await versions(main.stats, redis, ownRedis !== null);
    await main.close();
    const room = rateRoom(scenarios, limits, os.cpus().length);
    const storm = scenarios.find((s) => s.name === 'storm');
    if (storm && room) storm.efficiency = room.efficiency;

    let peer: PeerComparison | undefined;
    if (args.peer && storm) {
      const notifications = storm.channels.webhook.sent;
      say(
        `peer: ${args.peer}, fed the storm's ${notifications} webhook notifications, ${peerRuns} runs in turns with ours`,
      );
      // Ours: the same storm for the webhook subscribers alone (the peer sends webhooks only,
      // and an email costs several webhooks), on a fresh database and fresh workers, then a
      // second storm in the same workers.
      const webhookData = webhookSubscribersOnly(data);
      const comparison: PeerComparison = { rounds: [], ours: [] };
      for (let round = 1; round <= peerRuns; round += 1) {
        receiver.reset();
        const theirs = await runAlertmanagerPeer({
          receiverOrigin: receiver.origin,
          notifications,
          say,
        });
        comparison.rounds.push(theirs);
        if ('skipped' in theirs) {
          say(`peer skipped: ${theirs.skipped}`);
          break;
        }
        say(`peer run ${round}: ${theirs.cpuMsPerNotification.toFixed(3)} ms per notification`);
        say(`our webhook storms, run ${round}: fresh workers, then warm`);
        const again = await open(webhookData);
        const pids = await again.startWorkers(workerCount, {
          nodeArgs: workerNodeArgs,
          logName: 'webhook-worker',
        });
        const againEnv = envOf(again, webhookData, pids);
        if (source === 'v1') await adoptV1Points(againEnv);
        const webhookStates = scenarioStates(webhookData, new Date());
        const cold = await runScenario(againEnv, 'storm', webhookStates.storm);
        say(`storm, webhook subscribers only: ${summary(cold)}`);
        const clear = await runScenario(againEnv, 'all clear', webhookStates.allClearAfterStorm);
        say(`all clear, webhook subscribers only: ${summary(clear)}`);
        const warmAgain = await runScenario(againEnv, 'warm storm', webhookStates.warmStorm);
        say(`warm storm, webhook subscribers only: ${summary(warmAgain)}`);
        await again.close();
        comparison.ours.push({ cold, clear, warm: warmAgain });
      }
      if (comparison.ours.length > 0) {
        say('peer once more, fed the storm while as many earlier alerts stay active');
        receiver.reset();
        comparison.loaded = await runAlertmanagerPeer({
          receiverOrigin: receiver.origin,
          notifications,
          activeBefore: notifications,
          say,
        });
      }
      peer = comparison;
    }

    const report: BenchReport = {
      mode: quick ? 'quick' : 'full',
      startedAt: new Date(started).toISOString(),
      totalSeconds: (Date.now() - started) / 1000,
      machine: {
        cpus: os.cpus().length,
        cpuModel: os.cpus()[0]?.model.trim() ?? '?',
        memoryGb: Math.round(os.totalmem() / 2 ** 30),
        node: process.versions.node,
        ...versionsOf,
      },
      settings: {
        source,
        workerProcesses: workerCount,
        workerNodeArgs,
        checkConcurrency: main.config.checkConcurrency,
        deliveryConcurrency: main.config.deliveryConcurrency,
        qweatherQpm: main.config.qweather.qpm,
        places: data.places.length,
        subscribers: data.subscribers.length,
        subscriptions: data.subscriptionCount,
        subscriptionsByChannel: data.subscriptionsByChannel,
      },
      limits,
      scenarios,
      workerPeakRssMb,
      targets: judgeTargets({
        scenarios,
        workerPeakRssMb,
        // Every place is listed and watched in the quiet cycle; v1 checks every watched point.
        quietCalls:
          source === 'v1'
            ? { weatherAlert: mainEnv.watchers.size }
            : { warningList: 1, warningNow: data.places.length },
        peer,
      }),
      ...(room ? { rateRoom: room } : {}),
      ...(peer ? { peer } : {}),
      correct: [
        ...scenarios,
        ...(peer?.ours.flatMap((o) => [o.cold, o.clear, o.warm]) ?? []),
      ].every((s) => s.correctness.ok),
    };
    return report;
  } finally {
    process.off('SIGINT', interrupted);
    process.off('SIGTERM', interrupted);
    await cleanup();
  }
}

/** A scenario in a line: its wall time, what it delivered, and whether that was correct. */
function summary(result: ScenarioResult): string {
  return (
    `${result.wallSeconds.toFixed(2)} s, ` +
    `${result.channels.webhook.sent + result.channels.email.sent} notifications in ` +
    `${result.channels.webhook.messagesSent + result.channels.email.messagesSent} messages, ` +
    `${result.correctness.ok ? 'correct' : `PROBLEMS: ${result.correctness.problems.join('; ')}`}`
  );
}

async function main(): Promise<number> {
  await startJanitor();
  const reports: BenchReport[] = [];
  for (let i = 1; i <= runs; i += 1) {
    if (runs > 1) say(`run ${i} of ${runs}`);
    const report = await runOnce();
    reports.push(report);
    if (i < runs) console.log(formatText(report));
  }
  // The last run's report, with every target over all the runs.
  const report = reports[reports.length - 1]!;
  if (runs > 1) report.series = targetSeries(reports);
  console.log(formatText(report));
  mkdirSync(dirname(outFile), { recursive: true });
  await writeFile(outFile, `${JSON.stringify(report, null, 2)}\n`);
  say(`report written to ${outFile}`);
  if (!quick && !args['no-md'] && source === 'v7') {
    await updateBenchmarksMd(report);
    say('BENCHMARKS.md updated');
  }
  return reports.every((r) => r.correct) ? 0 : 1;
}

try {
  process.exitCode = await main();
  releaseJanitor();
} catch (err) {
  console.error(`bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
  console.error(USAGE);
  // Its servers and connections may still be open: a failed bench ends here, not never.
  process.exit(2);
}
