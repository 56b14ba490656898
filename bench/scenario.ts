import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'drizzle-orm';
import type { Redis } from 'ioredis';
import type pg from 'pg';
import { queryRows } from '../src/db/client.js';
import type { EventType } from '../src/domain/detect.js';
import { filterAccepts } from '../src/domain/filters.js';
import type { Warning } from '../src/domain/warning.js';
import type { PipelineContext } from '../src/runtime/context.js';
import { createdInCycle, type Channel } from '../src/ledger/index.js';
import { runPoll } from '../src/pipeline/poll.js';
import type { Simulator } from '../src/simulator/index.js';
import type { BenchData, BenchSource, ScenarioState } from './data.js';
import { cpuSeconds, sampleMemory } from './procs.js';
import type { BenchReceiver, BenchSmtp } from './sinks.js';
import {
  flushTableStats,
  PIPELINE_BACKENDS,
  readRedisStats,
  readTableStats,
  readTransactions,
  otherTransactionsBetween,
  readOtherTransactions,
  readWalBytes,
  redisDelta,
  samplePgActivity,
  tableDelta,
  type TableStats,
} from './stats.js';

export type ScenarioName = 'storm' | 'escalation' | 'quiet' | 'all clear' | 'warm storm';

export interface ChannelResult {
  /** The cycle's notifications of this channel (ledger rows). */
  deliveries: number;
  /** Of them, those whose message was sent. */
  sent: number;
  /** The messages that carry them: one email or one POST each (docs/messages.md). */
  messages: number;
  messagesSent: number;
  /** From the first to the last first attempt of this channel. */
  spanSeconds: number;
  /** Messages sent per second: sends, comparable with the raw channel's. */
  perSecond: number;
  /** From a notification's detection (its check) to the send of its message. */
  latencySeconds: { p50: number; p95: number; p99: number; max: number };
  /**
   * From the cycle's list call to the send: what a subscriber waits once the poll begins. The
   * figure above leaves out the wait for a check, so anything that delays checks flatters it.
   */
  fromListCallSeconds: { p50: number; p95: number; p99: number };
}

export interface ScenarioResult {
  name: ScenarioName;
  cycleId: string;
  /** From the list call to the last first delivery attempt (or the last check, with none). */
  wallSeconds: number;
  /** From the list call to the cycle's last check. */
  checksSeconds: number;
  listed: number;
  checked: number;
  upstreamCalls: {
    /** The list and the checks, without the English ones. */
    total: number;
    warningList: number;
    warningNow: number;
    /** v1: one call per watched point. */
    weatherAlert: number;
    /** Checks asked again with `lang=en` for English subscribers: counted apart. */
    english: number;
    errors: number;
  };
  events: Record<EventType, number>;
  expectedEvents: Record<EventType, number>;
  channels: Record<Channel, ChannelResult>;
  /** Messages (sends) of both channels per second, from the first to the last first attempt. */
  deliveriesPerSecond: number;
  /** `postgres` includes `vacuum`: the clean-up of the row versions the scenario left. */
  cpuSeconds: {
    workers: number[];
    runner: number;
    postgres: number;
    vacuum: number;
    redis: number;
  };
  peakRssMb: number[];
  rowsWritten: { total: number; perSecond: number; byTable: TableStats };
  postgresTransactions: number;
  /** WAL written during the scenario (pg_stat_wal: the whole server's). */
  walBytes: number;
  /** Transactions of the server's other databases meanwhile: 0 when the WAL is all ours. */
  otherDatabasesTransactions: number;
  /** Active backends by wait event, sampled every 100 ms (CPU = active, not waiting). */
  postgresActivity: Record<string, number>;
  redisCommands: { total: number; top: [string, number][] };
  /** What one notification of the cycle cost, both channels together; null with none. */
  perNotification: PerNotification | null;
  /**
   * Storm only: the same run's bare-send CPU for the storm's messages (each channel at its own
   * bare cost) over all the CPU the storm used, set once the limits are known (`rateRoom`).
   * Reported, not a target (issue 38).
   */
  efficiency?: number;
  correctness: { ok: boolean; problems: string[]; expectedDeliveries: number };
}

/** Costs per notification: what the ledger's and the queues' shape controls. */
export interface PerNotification {
  /** Row versions written (inserted, updated, deleted) in every table. */
  rows: number;
  /** Of them, in the ledger itself: `deliveries` and `messages`. */
  ledgerRows: number;
  walBytes: number;
  redisCommands: number;
  /** CPU of Postgres and Redis, ms. */
  pgRedisCpuMs: number;
}

/** Divides a scenario's totals by its notifications. */
export function perNotification(
  notifications: number,
  totals: {
    rows: number;
    byTable: TableStats;
    walBytes: number;
    redisCommands: number;
    cpuSeconds: { postgres: number; redis: number };
  },
): PerNotification | null {
  if (notifications === 0) return null;
  const written = (table: string) => {
    const t = totals.byTable[table];
    return t ? t.ins + t.upd + t.del : 0;
  };
  return {
    rows: totals.rows / notifications,
    ledgerRows: (written('deliveries') + written('messages')) / notifications,
    walBytes: totals.walBytes / notifications,
    redisCommands: totals.redisCommands / notifications,
    pgRedisCpuMs: ((totals.cpuSeconds.postgres + totals.cpuSeconds.redis) / notifications) * 1000,
  };
}

export interface ScenarioEnv {
  ctx: PipelineContext;
  stats: pg.Client;
  /** A second connection, for sampling backend activity while the cycle runs. */
  activity: pg.Client;
  redis: Redis;
  sim: Simulator;
  receiver: BenchReceiver;
  smtp: BenchSmtp;
  data: BenchData;
  /** What the workers poll (QWEATHER_ALERT_SOURCE). */
  source: BenchSource;
  /** Subscriber indexes by what a check checks: a place (v7) or a point (v1). */
  watchers: ReadonlyMap<string, readonly number[]>;
  /** The uuid of each bench subscriber, by index. */
  subscriberIds: readonly string[];
  workerPids: readonly number[];
  timeoutMs: number;
  /**
   * `subscriber|warning id` of every notification owed so far: who was told any warning of a
   * story hears its update as such, its cancel and its end; anyone else hears the update as
   * their first news of it, a new, and nothing of its end (README, promises).
   */
  told: Set<string>;
}

async function waitUntil(what: string, timeoutMs: number, done: () => Promise<boolean>) {
  const deadline = Date.now() + timeoutMs;
  while (!(await done())) {
    if (Date.now() > deadline) throw new Error(`bench: timed out waiting for ${what}`);
    await sleep(50);
  }
}

/** How long arrivals at the sinks may stand still before the wait asks the database anyway. */
const LEDGER_POLL_MS = 2000;

/**
 * Waits until no message of the cycle is still owed its first attempt (still collecting, or
 * pending). Counting the cycle's pending messages every 50 ms took about 20 ms of a Postgres
 * backend each time in a storm, a tenth of a core taken from the pipeline it measures; so the
 * wait follows the sinks, which count arrivals (one per message) in memory, and asks the
 * database once everything has arrived, or once arrivals have stood still for 2 s (a dead or
 * retrying message never arrives, and is no longer pending either). Asking every 2 s while
 * messages were still arriving cost 0.12 s of a backend a time late in a storm, when the
 * unsent batches are many: over a second of the storm's Postgres CPU was the bench's own.
 */
async function waitForFirstAttempts(
  env: ScenarioEnv,
  name: string,
  cycleId: string,
  startedAt: Date,
) {
  const pendingMessages = async () => {
    // The messages made since the cycle began, found through the due index: probing the
    // ledger per message for the cycle's id took the planner to a bitmap of the whole cycle per
    // probe (83 s of a backend in one storm).
    const [row] = await queryRows<{ n: number }>(
      env.ctx.db,
      sql`SELECT (SELECT count(*)::int FROM messages
                  WHERE status IN ('open', 'pending') AND created_at >= ${startedAt})
            -- The cycle's release is still to come.
            + (SELECT count(*)::int FROM poll_cycles
               WHERE id = ${cycleId} AND released_at IS NULL) AS n`,
    );
    return row?.n ?? 0;
  };
  const [created] = await queryRows<{ n: number }>(
    env.ctx.db,
    sql`SELECT count(DISTINCT d.message_id)::int AS n FROM deliveries d
        WHERE ${createdInCycle(cycleId)}`,
  );
  const expected = created?.n ?? 0;
  let seen = -1;
  let movedAt = Date.now();
  await waitUntil(`the first delivery attempts of the ${name} cycle`, env.timeoutMs, async () => {
    const arrivals = env.receiver.received.size + env.smtp.received.size;
    if (arrivals !== seen) {
      seen = arrivals;
      movedAt = Date.now();
    }
    if (arrivals < expected && Date.now() - movedAt < LEDGER_POLL_MS) return false;
    // Still or not, the next ask waits for another 2 s without arrivals.
    movedAt = Date.now();
    return (await pendingMessages()) === 0;
  });
}

interface CycleRow {
  status: string;
  listed: number;
  planned: number;
  checked: number;
  upstream_errors: number;
  events_new: number;
  events_update: number;
  events_cancel: number;
  events_expired: number;
  events_resumed: number;
  english_calls: number;
  finished_at: Date | null;
}

interface ChannelRow {
  channel: Channel;
  n: number;
  sent: number;
  messages: number;
  messages_sent: number;
  first_attempt: Date | null;
  last_attempt: Date | null;
  p50: number | null;
  p95: number | null;
  p99: number | null;
  max: number | null;
  list_p50: number | null;
  list_p95: number | null;
  list_p99: number | null;
}

/** Waits for a cycle's checks: its row stops running. */
async function waitForChecks(env: ScenarioEnv, what: string, cycleId: string) {
  await waitUntil(what, env.timeoutMs, async () => {
    const [row] = await queryRows<{ status: string }>(
      env.ctx.db,
      sql`SELECT status FROM poll_cycles WHERE id = ${cycleId}`,
    );
    if (row?.status === 'running') return false;
    // A cycle is complete once its last check is counted; that check's job still releases the
    // cycle's messages after. Measuring begins only when no check job is left: a check still
    // running would be the next cycle's cost, or lose its connection to the statistics flush
    // and be retried, asking the upstream again.
    const counts = await env.ctx.queues.check.getJobCounts('active', 'wait', 'delayed');
    return Object.values(counts).every((n) => n === 0);
  });
}

/**
 * v1 only, before the storm, not measured: a cycle with no alerts anywhere, in which each
 * watched point gets its row and takes over v7's open warnings (none here), as the points of a
 * deployment did long ago. The storm then measures checks, not first adoptions, which take the
 * point's lock whatever the answer (src/detection/apply-check.ts).
 */
export async function adoptV1Points(env: ScenarioEnv): Promise<void> {
  env.sim.clearWarnings();
  env.sim.setListed(null);
  const outcome = await runPoll(env.ctx, { jobKey: `bench-adopt-${randomUUID()}` });
  if (!outcome.ok) throw new Error(`bench: the adopting cycle failed: ${outcome.error}`);
  await waitForChecks(env, 'the adopting cycle', outcome.cycleId);
}

/** Applies a scenario's upstream state, runs one cycle, measures it and checks its outcome. */
export async function runScenario(
  env: ScenarioEnv,
  name: ScenarioName,
  state: ScenarioState,
): Promise<ScenarioResult> {
  const { ctx, stats, sim } = env;
  sim.clearWarnings();
  for (const [place, records] of state.warnings) sim.setWarnings(place, records);
  sim.setListed(state.listed);
  sim.resetRequests();
  env.receiver.reset();
  env.smtp.reset();

  await flushTableStats(stats);
  const tablesBefore = await readTableStats(stats);
  const xactBefore = await readTransactions(stats);
  const walBefore = await readWalBytes(stats);
  const othersBefore = await readOtherTransactions(stats);
  const redisBefore = await readRedisStats(env.redis);
  const cpuBefore = env.workerPids.map(cpuSeconds);
  const runnerBefore = process.cpuUsage();
  const postgresBefore = await backendCpu(stats);
  const stopSampling = sampleMemory(env.workerPids);
  const stopActivity = samplePgActivity(env.activity);

  const startedAt = new Date();
  const outcome = await runPoll(ctx, { jobKey: `bench-${name.replace(' ', '-')}-${randomUUID()}` });
  if (!outcome.ok) throw new Error(`bench: the ${name} list call failed: ${outcome.error}`);
  const cycleId = outcome.cycleId;

  await waitForChecks(env, `the checks of the ${name} cycle`, cycleId);
  await waitForFirstAttempts(env, name, cycleId, startedAt);

  const peakRssMb = stopSampling();
  const activity = await stopActivity();
  const cpuWorkers = env.workerPids.map((pid, i) => cpuSeconds(pid) - cpuBefore[i]!);
  const runnerCpu = process.cpuUsage(runnerBefore);
  const postgresAfter = await backendCpu(stats);
  let postgresCpu = 0;
  for (const [pid, after] of postgresAfter) postgresCpu += after - (postgresBefore.get(pid) ?? 0);
  const redisAfter = await readRedisStats(env.redis);
  await flushTableStats(stats);
  const tables = tableDelta(tablesBefore, await readTableStats(stats));
  const transactions = (await readTransactions(stats)) - xactBefore;
  const vacuumCpu = await vacuum(stats);
  postgresCpu += vacuumCpu;
  const walBytes = (await readWalBytes(stats)) - walBefore;
  const otherDatabasesTransactions = otherTransactionsBetween(
    othersBefore,
    await readOtherTransactions(stats),
  );

  const [cycle] = await queryRows<CycleRow>(
    ctx.db,
    sql`SELECT status, listed, planned, checked, upstream_errors, events_new, events_update,
          events_cancel, events_expired, events_resumed, english_calls, finished_at
        FROM poll_cycles WHERE id = ${cycleId}`,
  );
  if (!cycle) throw new Error(`bench: cycle ${cycleId} vanished`);
  const channelRows = await queryRows<ChannelRow>(
    ctx.db,
    sql`SELECT d.channel, count(*)::int AS n,
          count(*) FILTER (WHERE m.status = 'sent')::int AS sent,
          count(DISTINCT m.id)::int AS messages,
          count(DISTINCT m.id) FILTER (WHERE m.status = 'sent')::int AS messages_sent,
          min(coalesce(m.sent_at, m.updated_at)) AS first_attempt,
          max(coalesce(m.sent_at, m.updated_at)) AS last_attempt,
          percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM m.sent_at - e.detected_at)) AS p50,
          percentile_cont(0.95) WITHIN GROUP (ORDER BY extract(epoch FROM m.sent_at - e.detected_at)) AS p95,
          percentile_cont(0.99) WITHIN GROUP (ORDER BY extract(epoch FROM m.sent_at - e.detected_at)) AS p99,
          max(extract(epoch FROM m.sent_at - e.detected_at))::float8 AS max,
          percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM m.sent_at - ${startedAt}::timestamptz)) AS list_p50,
          percentile_cont(0.95) WITHIN GROUP (ORDER BY extract(epoch FROM m.sent_at - ${startedAt}::timestamptz)) AS list_p95,
          percentile_cont(0.99) WITHIN GROUP (ORDER BY extract(epoch FROM m.sent_at - ${startedAt}::timestamptz)) AS list_p99
        FROM deliveries d JOIN messages m ON m.id = d.message_id
        JOIN events e ON e.id = d.event_id
        WHERE d.cycle_id = ${cycleId} GROUP BY d.channel`,
  );

  const seconds = (from: Date, to: Date | null) =>
    to ? Math.max(0, (new Date(to).getTime() - from.getTime()) / 1000) : 0;
  const channels = {} as Record<Channel, ChannelResult>;
  for (const channel of ['webhook', 'email'] as const) {
    const row = channelRows.find((r) => r.channel === channel);
    const first = row?.first_attempt ? new Date(row.first_attempt) : null;
    const span = first ? seconds(first, row?.last_attempt ?? null) : 0;
    channels[channel] = {
      deliveries: row?.n ?? 0,
      sent: row?.sent ?? 0,
      messages: row?.messages ?? 0,
      messagesSent: row?.messages_sent ?? 0,
      spanSeconds: span,
      perSecond: span > 0 ? (row?.messages_sent ?? 0) / span : 0,
      latencySeconds: {
        p50: Number(row?.p50 ?? 0),
        p95: Number(row?.p95 ?? 0),
        p99: Number(row?.p99 ?? 0),
        max: Number(row?.max ?? 0),
      },
      fromListCallSeconds: {
        p50: Number(row?.list_p50 ?? 0),
        p95: Number(row?.list_p95 ?? 0),
        p99: Number(row?.list_p99 ?? 0),
      },
    };
  }
  const attempts = channelRows.flatMap((r) => [r.first_attempt, r.last_attempt]).filter(Boolean);
  const times = attempts.map((t) => new Date(t!).getTime());
  const finishedAt = cycle.finished_at ? new Date(cycle.finished_at) : new Date();
  const end = Math.max(finishedAt.getTime(), ...times);
  const wallSeconds = (end - startedAt.getTime()) / 1000;
  const deliverSpan = times.length > 0 ? (Math.max(...times) - Math.min(...times)) / 1000 : 0;
  const allSends = channels.webhook.messagesSent + channels.email.messagesSent;
  const requests = sim.requests();
  const rowsTotal = Object.values(tables).reduce((n, t) => n + t.ins + t.upd + t.del, 0);
  const redis = redisDelta(redisBefore, redisAfter);

  const events: Record<EventType, number> = {
    new: cycle.events_new,
    update: cycle.events_update,
    cancel: cycle.events_cancel,
    expired: cycle.events_expired,
    resumed: cycle.events_resumed,
  };
  const correctness = await checkCorrectness(env, {
    name,
    cycleId,
    state,
    events,
    planned: cycle.planned,
    upstreamCalls: requests.total - cycle.english_calls,
    englishCalls: cycle.english_calls,
    tables,
  });

  return {
    name,
    cycleId,
    wallSeconds,
    checksSeconds: seconds(startedAt, finishedAt),
    listed: cycle.listed,
    checked: cycle.checked,
    upstreamCalls: {
      total: requests.total - cycle.english_calls,
      warningList: requests.byOperation.warningList,
      warningNow: requests.byOperation.warningNow - (env.source === 'v1' ? 0 : cycle.english_calls),
      weatherAlert:
        requests.byOperation.weatherAlert - (env.source === 'v1' ? cycle.english_calls : 0),
      english: cycle.english_calls,
      errors: cycle.upstream_errors,
    },
    events,
    expectedEvents: state.expectedEvents,
    channels,
    deliveriesPerSecond: deliverSpan > 0 ? allSends / deliverSpan : 0,
    cpuSeconds: {
      workers: cpuWorkers,
      runner: (runnerCpu.user + runnerCpu.system) / 1e6,
      postgres: postgresCpu,
      vacuum: vacuumCpu,
      redis: redis.cpuSeconds,
    },
    peakRssMb,
    rowsWritten: { total: rowsTotal, perSecond: rowsTotal / wallSeconds, byTable: tables },
    postgresTransactions: transactions,
    walBytes,
    otherDatabasesTransactions,
    postgresActivity: activity,
    redisCommands: { total: redis.commands, top: redis.top },
    perNotification: perNotification(channels.webhook.sent + channels.email.sent, {
      rows: rowsTotal,
      byTable: tables,
      walBytes,
      redisCommands: redis.commands,
      cpuSeconds: { postgres: postgresCpu, redis: redis.cpuSeconds },
    }),
    correctness,
  };
}

/**
 * Vacuums and analyzes the bench database, as autovacuum would after a scenario's writes, and
 * returns the CPU seconds it took. This machine's Postgres runs with autovacuum off and would
 * keep every sent mark's old row version, which no deployment does; the clean-up is the
 * scenario's cost, so it counts in its Postgres CPU (and its WAL), not in its wall.
 */
async function vacuum(client: pg.Client): Promise<number> {
  const { rows } = await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
  const pid = rows[0]!.pid;
  const before = cpuSeconds(pid);
  await client.query('VACUUM (ANALYZE)');
  return cpuSeconds(pid) - before;
}

/**
 * CPU seconds of each backend of the bench database (the server is shared: other databases'
 * backends are not ours), less the bench's own statistics and activity sessions, which sample
 * the cycle rather than run it. A backend that ends during the cycle takes its time with it;
 * the pools keep theirs open while they are busy, so little is lost.
 */
async function backendCpu(client: pg.Client): Promise<Map<number, number>> {
  const { rows } = await client.query<{ pid: number }>(
    `SELECT pid FROM pg_stat_activity WHERE ${PIPELINE_BACKENDS}`,
  );
  return new Map(rows.map((r) => [r.pid, cpuSeconds(r.pid)]));
}

/** A notification of the cycle and the state of its message. */
interface DeliveryRow {
  id: string;
  subscriber_id: string;
  warning_id: string;
  event_type: EventType;
  channel: Channel;
  message_id: string;
  message_subscriber_id: string;
  message_channel: Channel;
  status: string;
  attempts: number;
}

interface EventRow {
  place_id: string;
  warning_id: string;
  type: EventType;
  supersedes: string[];
  record: Omit<Warning, 'raw'>;
}

/**
 * Tables a cycle that finds nothing may write: its own record, the checked rows' bookkeeping
 * (places for v7, points for v1) and last-seen times.
 */
const QUIET_WRITES: Record<BenchSource, Record<string, (keyof TableStats[string])[]>> = {
  v7: { poll_cycles: ['ins', 'upd'], places: ['upd'], warnings: ['upd'] },
  v1: { poll_cycles: ['ins', 'upd'], alert_points: ['upd'], warnings: ['upd'] },
};

/**
 * The correctness half of the report: the events the scenario implies, exactly the
 * notifications the subscribers' filters owe, each in a message of its own subscriber and
 * channel, every message sent on its first attempt and received exactly once (webhooks by
 * webhook-id with a valid signature, emails by Message-ID): so every notification is delivered
 * exactly once. Also the upstream called once per listed watched place, and a quiet cycle
 * writing nothing else.
 */
async function checkCorrectness(
  env: ScenarioEnv,
  c: {
    name: ScenarioName;
    cycleId: string;
    state: ScenarioState;
    events: Record<EventType, number>;
    planned: number;
    upstreamCalls: number;
    englishCalls: number;
    tables: TableStats;
  },
): Promise<{ ok: boolean; problems: string[]; expectedDeliveries: number }> {
  const problems: string[] = [];
  for (const type of ['new', 'update', 'cancel', 'expired'] as const) {
    if (c.events[type] !== c.state.expectedEvents[type]) {
      problems.push(`${type} events: ${c.events[type]}, expected ${c.state.expectedEvents[type]}`);
    }
  }
  // v7 checks the listed places someone watches, after one list call; v1 has no list and
  // checks every watched point.
  const listed = c.state.listed ?? [...c.state.warnings.keys()];
  const checks =
    env.source === 'v1' ? env.watchers.size : listed.filter((id) => env.watchers.has(id)).length;
  const calls = env.source === 'v1' ? checks : 1 + checks;
  if (c.planned !== checks) problems.push(`planned ${c.planned} checks, expected ${checks}`);
  if (c.upstreamCalls !== calls) {
    problems.push(`${c.upstreamCalls} upstream calls, expected ${calls}`);
  }
  // Checked keys an English subscriber watches are asked again in English, and only those.
  const checkedKeys = env.source === 'v1' ? [...env.watchers.keys()] : listed;
  const english = checkedKeys.filter((key) =>
    (env.watchers.get(key) ?? []).some((s) => env.data.subscribers[s]!.lang === 'en'),
  ).length;
  if (c.englishCalls !== english) {
    problems.push(`${c.englishCalls} calls in English, expected ${english}`);
  }

  const indexOf = new Map(env.subscriberIds.map((id, i) => [id, i]));
  const eventRows = await queryRows<EventRow>(
    env.ctx.db,
    sql`SELECT place_id, warning_id, type, supersedes, record FROM events
        WHERE cycle_id = ${c.cycleId}`,
  );
  // What the ledger's once-only rule keys on: a subscriber is told a warning's event once, and
  // in v1 one alert may be reported at several points a subscriber watches. Warnings in force
  // are told before endings, so that a story begun and ended in one cycle is told whole.
  const expected = new Set<string>();
  const endings = (e: EventRow) => (e.type === 'cancel' || e.type === 'expired' ? 1 : 0);
  for (const e of [...eventRows].sort((a, b) => endings(a) - endings(b))) {
    const warning = { ...e.record, raw: null };
    // A v1 event names its point.
    for (const s of env.watchers.get(e.place_id) ?? []) {
      const sub = env.data.subscribers[s]!;
      if (!filterAccepts(sub.filter, { type: e.type, warning })) continue;
      const knows = [e.warning_id, ...e.supersedes].some((id) => env.told.has(`${s}|${id}`));
      if (endings(e) === 1 && !knows) continue;
      const type = e.type === 'update' && !knows ? 'new' : e.type;
      expected.add(`${s}|${e.warning_id}|${type}`);
    }
  }
  for (const key of expected) env.told.add(key.slice(0, key.lastIndexOf('|')));
  const rows = await queryRows<DeliveryRow>(
    env.ctx.db,
    sql`SELECT d.id, d.subscriber_id, d.warning_id, d.event_type, d.channel, d.message_id,
          m.subscriber_id AS message_subscriber_id, m.channel AS message_channel, m.status,
          m.attempts
        FROM deliveries d LEFT JOIN messages m ON m.id = d.message_id
        WHERE d.cycle_id = ${c.cycleId}`,
  );
  let extra = 0;
  let notSentOnce = 0;
  let strayMessages = 0;
  let webhookMissing = 0;
  let webhookDuplicated = 0;
  let emailMissing = 0;
  let emailDuplicated = 0;
  const seen = new Set<string>();
  const messages = new Map<string, Channel>();
  for (const row of rows) {
    const key = `${indexOf.get(row.subscriber_id)}|${row.warning_id}|${row.event_type}`;
    if (!expected.has(key) || seen.has(key)) extra += 1;
    seen.add(key);
    if (row.status !== 'sent' || row.attempts !== 1) notSentOnce += 1;
    // A message carries notifications of its own subscriber and channel only (and exists).
    if (row.message_subscriber_id !== row.subscriber_id || row.message_channel !== row.channel) {
      strayMessages += 1;
    }
    messages.set(row.message_id, row.channel);
  }
  for (const [id, channel] of messages) {
    const times =
      channel === 'webhook' ? env.receiver.received.get(id) : env.smtp.received.get(`${id}@qwn`);
    if (times === undefined) {
      if (channel === 'webhook') webhookMissing += 1;
      else emailMissing += 1;
    } else if (times > 1) {
      if (channel === 'webhook') webhookDuplicated += 1;
      else emailDuplicated += 1;
    }
  }
  const missing = [...expected].filter((k) => !seen.has(k)).length;
  if (missing > 0) problems.push(`${missing} owed notifications have no delivery row`);
  if (extra > 0) problems.push(`${extra} delivery rows nobody is owed`);
  if (notSentOnce > 0) {
    problems.push(`${notSentOnce} notifications whose message was not sent on its first attempt`);
  }
  if (strayMessages > 0) {
    problems.push(`${strayMessages} notifications in a message of another subscriber or none`);
  }
  if (webhookMissing + emailMissing > 0) {
    problems.push(`never received: ${webhookMissing} webhooks, ${emailMissing} emails`);
  }
  if (webhookDuplicated + emailDuplicated > 0) {
    problems.push(`received twice: ${webhookDuplicated} webhooks, ${emailDuplicated} emails`);
  }
  // One POST per webhook message and one email per email message, nothing else.
  const webhookMessages = [...messages.values()].filter((c) => c === 'webhook').length;
  const emailMessages = messages.size - webhookMessages;
  if (env.receiver.received.size !== webhookMessages) {
    problems.push(
      `receiver saw ${env.receiver.received.size} webhook ids, the cycle has ${webhookMessages} webhook messages`,
    );
  }
  if (env.smtp.total !== emailMessages) {
    problems.push(
      `SMTP server got ${env.smtp.total} messages, the cycle has ${emailMessages} email messages`,
    );
  }
  if (env.receiver.badSignatures > 0) {
    problems.push(
      `${env.receiver.badSignatures} webhook signatures failed (${env.receiver.firstBadSignature})`,
    );
  }
  if (c.name === 'quiet') {
    for (const [table, writes] of Object.entries(c.tables)) {
      const allowed = QUIET_WRITES[env.source][table] ?? [];
      for (const kind of ['ins', 'upd', 'del'] as const) {
        if (writes[kind] > 0 && !allowed.includes(kind)) {
          problems.push(`quiet cycle wrote ${table} (${kind} ${writes[kind]})`);
        }
      }
    }
    if ((c.tables.poll_cycles?.ins ?? 0) !== 1)
      problems.push('quiet cycle did not insert one cycle');
  }
  return { ok: problems.length === 0, problems, expectedDeliveries: expected.size };
}
