import { CHANNELS_SHOWN, subscriberChannelSql } from '../channels/kinds.js';
import { randomBytes } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { Redis } from 'ioredis';
import { pino, type DestinationStream } from 'pino';
import { applySeed } from '../admin/seed.js';
import { describeRobot } from '../channels/robot-identity.js';
import { generateWebhookSecret } from '../admin/seed-validate.js';
import { formatTable } from '../cli/table.js';
import { loadConfig } from '../config.js';
import { queryRows } from '../db/client.js';
import { EVENT_TYPES, type EventType } from '../domain/detect.js';
import { createLogger, scrub } from '../logger.js';
import { createClientFromConfig } from '../qweather/client.js';
import {
  heldForQuietHours,
  notificationsByChannel,
  type ChannelStatusCount,
} from '../ledger/index.js';
import { runCycleOnce, type CycleSummary } from '../pipeline/run-once.js';
import { createRuntime, type Runtime } from '../runtime/runtime.js';
import { deletePrefixKeys } from '../runtime/queues.js';
import { startSimulator } from '../simulator/index.js';
import { provideDatabase } from './database.js';
import { provideRedis } from './redis.js';
import { startRobotSink } from './robot-sink.js';
import { startSmtpSink } from './smtp-sink.js';
import { UNWATCHED_PLACES, buildStoryline } from './storyline.js';
import {
  DISPATCH_PATH,
  TYPHOON_DESK_PATH,
  demoSeedDocument,
  shanghaiClock,
} from './subscribers.js';
import { startWebhookReceiver } from './webhook-receiver.js';

/**
 * `qwn demo`: the production pipeline (poll, check and deliver jobs on BullMQ workers, Postgres,
 * the email and webhook channels) run cycle by cycle against the simulator playing a storyline,
 * with subscribers seeded by the seed code and both channels delivering into local sinks.
 */

export interface DemoOptions {
  /** The environment (readEnvironment()); only a few settings are taken from it. */
  readonly env: Readonly<Record<string, string | undefined>>;
  /** Receives the story, one line at a time. */
  readonly print: (line: string) => void;
  /** Where the SMTP sink saves `.eml` files. */
  readonly mailDir: string;
  /** Stops the demo between cycles (SIGINT); everything started is still stopped. */
  readonly signal?: AbortSignal;
  /** Where the pipeline's logs go; default stderr. */
  readonly logDestination?: DestinationStream;
  /** The program started when no Redis answers; default `redis-server` on PATH. */
  readonly redisCommand?: string;
}

export interface DemoReport {
  readonly cycles: readonly CycleSummary[];
  readonly events: Record<EventType, number>;
  readonly deliveries: readonly ChannelStatusCount[];
  readonly emailsSaved: number;
  readonly mailDir: string;
  readonly webhooks: { received: number; verified: number };
  /** warning-now calls made for places nobody watches: 0 is the point. */
  readonly unwatchedFetches: number;
}

export class DemoInterruptedError extends Error {
  override name = 'DemoInterruptedError';
}

export class DemoFailedError extends Error {
  override name = 'DemoFailedError';
}

/** Settings a user may tune for the demo; everything else is the demo's own. */
const TUNABLE = [
  'LOG_LEVEL',
  'CHECK_CONCURRENCY',
  'DELIVERY_CONCURRENCY',
  'QWEATHER_TIMEOUT_MS',
  'WEBHOOK_TIMEOUT_MS',
] as const;

const SIMULATOR_KEY = 'qwn-demo-key';

/**
 * How long the night shift's quiet hours still run when the story starts: longer than any
 * machine takes to tell it, so that 珠海's chain is always held. The demo then moves its clock
 * past the end rather than waiting for it (`releaseQuietHours`).
 */
const QUIET_HOURS_LEFT_MS = 10 * 60_000;

/**
 * The pipeline's clock in the demo: the machine's, until the story's end moves it past the night
 * shift's quiet hours, as a `qwn poll --once` run after they end would see it.
 */
class StoryClock {
  #aheadMs = 0;
  readonly now = (): Date => new Date(Date.now() + this.#aheadMs);
  moveTo(at: Date): void {
    this.#aheadMs = Math.max(this.#aheadMs, at.getTime() - Date.now());
  }
}

/** The webhook paths' column in the story's output. */
const PATH_WIDTH = Math.max(DISPATCH_PATH.length, TYPHOON_DESK_PATH.length);

async function deleteKeys(url: string, prefix: string): Promise<void> {
  const redis = new Redis(url, { maxRetriesPerRequest: 1, lazyConnect: true });
  redis.on('error', () => undefined);
  try {
    await redis.connect();
    await deletePrefixKeys(redis, prefix);
  } finally {
    redis.disconnect();
  }
}

function checkAbort(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw new DemoInterruptedError('interrupted');
}

export async function runDemo(options: DemoOptions): Promise<DemoReport> {
  const { print, signal } = options;
  const startedAt = Date.now();
  // The user's settings are validated as usual; only the locations of Postgres and Redis and
  // the tunables are taken from them.
  const userConfig = loadConfig(options.env);
  const logLevel = options.env.LOG_LEVEL ? userConfig.logLevel : 'warn';
  const logger = createLogger(logLevel, options.logDestination ?? pino.destination(2));

  // Stopped in reverse order, whatever happens.
  const cleanups: { what: string; run: () => Promise<void> }[] = [];
  const cleanup = async () => {
    for (const { what, run } of cleanups.reverse()) {
      await run().catch((err: unknown) => logger.warn({ err, what }, 'demo cleanup failed'));
    }
  };

  try {
    print(
      'qwn demo: the real pipeline (BullMQ workers, Postgres, email, webhook and chat-robot channels)',
    );
    print('against the built-in QWeather simulator playing a storyline.');
    print('');

    const redis = await provideRedis(userConfig.redisUrl, {
      ...(options.redisCommand ? { command: options.redisCommand } : {}),
    });
    cleanups.push({ what: 'redis-server', run: () => redis.close() });
    const prefix = `qwn-demo-${randomBytes(5).toString('hex')}`;
    if (redis.spawned) {
      print(
        `  redis       redis-server started for the demo on 127.0.0.1:${redis.spawned.port} (pid ${redis.spawned.pid}; stopped at the end)`,
      );
    } else {
      print(`  redis       ${scrub(redis.url)} (queue prefix ${prefix}, removed at the end)`);
      cleanups.push({ what: 'demo queue keys', run: () => deleteKeys(redis.url, prefix) });
    }
    checkAbort(signal);

    const demoDb = await provideDatabase(userConfig.databaseUrl);
    cleanups.push({ what: 'database', run: () => demoDb.close() });
    print(`  postgres    ${demoDb.description}`);
    checkAbort(signal);

    const sim = await startSimulator({ apiKey: SIMULATOR_KEY });
    cleanups.push({ what: 'simulator', run: () => sim.close() });
    print(`  upstream    QWeather simulator on ${sim.url}`);

    const smtp = await startSmtpSink({ saveDir: options.mailDir });
    cleanups.push({ what: 'smtp sink', run: () => smtp.close() });
    print(
      `  mail        SMTP sink on 127.0.0.1:${smtp.port}, saving .eml files in ${options.mailDir}`,
    );

    const dispatchSecret = generateWebhookSecret();
    const typhoonDeskSecret = generateWebhookSecret();
    const hooks = await startWebhookReceiver({
      secrets: { [DISPATCH_PATH]: dispatchSecret, [TYPHOON_DESK_PATH]: typhoonDeskSecret },
    });
    cleanups.push({ what: 'webhook sink', run: () => hooks.close() });
    print(`  webhooks    signature-verifying sink on ${hooks.origin}`);
    const robot = await startRobotSink();
    cleanups.push({ what: 'robot sink', run: () => robot.close() });
    print(`  robot       WeCom group robot sink ${describeRobot(robot.url)} (answers errcode 0)`);

    const tunables = Object.fromEntries(TUNABLE.map((name) => [name, options.env[name]]));
    const config = loadConfig({
      ...tunables,
      LOG_LEVEL: logLevel,
      REDIS_URL: redis.url,
      QUEUE_PREFIX: prefix,
      QWEATHER_API_URL: sim.url,
      QWEATHER_API_KEY: SIMULATOR_KEY,
      QWEATHER_ALERT_SOURCE: 'v7',
      WARNING_RANGE: 'cn',
      // The storyline's rainstorm ends by going missing from two cycles' checks, which the demo
      // runs seconds apart instead of over the quarter hour a real end needs.
      EXPIRE_AFTER_MISSES: '2',
      EXPIRE_AFTER_SECONDS: '0',
      CHECK_ALL_LISTED: 'false',
      SMTP_URL: smtp.url,
      MAIL_FROM: 'qwn demo <alerts@qwn-demo.example>',
      // Both sinks listen on loopback, which the webhook channel refuses by default.
      WEBHOOK_ALLOW_PRIVATE: 'true',
    });
    const clock = new StoryClock();
    const runtime = createRuntime(config, logger, { database: demoDb.database, now: clock.now });
    cleanups.push({ what: 'pipeline runtime', run: () => runtime.close() });
    const { ctx } = runtime;

    const lookup = createClientFromConfig(config, logger);
    const seeded = await applySeed(
      { db: ctx.db, lookup, logger },
      demoSeedDocument({
        webhookUrl: (path) => hooks.url(path),
        dispatchSecret,
        typhoonDeskSecret,
        quietHours: {
          from: new Date(Date.now() - 60_000),
          to: new Date(Date.now() + QUIET_HOURS_LEFT_MS),
        },
        wecomRobotUrl: robot.url,
      }),
    ).finally(() => lookup.close());
    if (!seeded.ok) {
      throw new DemoFailedError(
        `the demo's own seed was refused: ${seeded.problems.map((p) => p.message).join('; ')}`,
      );
    }
    const watched = new Set(
      (
        await queryRows<{ place_id: string }>(
          ctx.db,
          sql`SELECT DISTINCT place_id FROM subscriptions`,
        )
      ).map((r) => r.place_id),
    );
    print(
      `  subscribers ${seeded.created} seeded through the seed code, watching ${watched.size} places:`,
    );
    for (const line of formatTable(
      await queryRows<{ name: string; channel: string; lang: string; filter: string }>(
        ctx.db,
        sql`SELECT u.name,
              coalesce(u.robot_kind, ${sql.raw(subscriberChannelSql('u'))}) AS channel,
              u.lang,
              concat_ws(', ',
                CASE WHEN max(s.min_level) IS NOT NULL THEN max(s.min_level) || ' and above' END,
                CASE WHEN max(array_to_string(s.types, '/')) IS NOT NULL
                     THEN 'types ' || max(array_to_string(s.types, '/')) END,
                string_agg(p.name, ' ' ORDER BY p.name)) AS filter
            FROM subscribers u JOIN subscriptions s ON s.subscriber_id = u.id
            JOIN places p ON p.id = s.place_id
            GROUP BY u.id, u.name, u.email, u.lang ORDER BY u.created_at, u.name`,
      ),
      [
        { header: 'name', value: (r) => r.name },
        { header: 'channel', value: (r) => r.channel },
        { header: 'lang', value: (r) => r.lang },
        { header: 'watching', value: (r) => r.filter },
      ],
    ).split('\n')) {
      print(`    ${line}`);
    }
    print('');

    const story = buildStoryline(new Date());
    sim.loadScenario(story.scenario);
    const cycles: CycleSummary[] = [];
    const unwatchedIds = new Set<string>(Object.values(UNWATCHED_PLACES).map((p) => p.id));
    for (const [index, step] of story.steps.entries()) {
      checkAbort(signal);
      if (index > 0) sim.step(index);
      const mailsBefore = smtp.messages.length;
      const hooksBefore = hooks.requests.length;
      const robotBefore = robot.posts.length;
      const listedIds = sim.state().listed;
      const summary = await runCycleOnce(ctx, runtime.redis, { timeoutMs: 30_000 });
      cycles.push(summary);
      if (!summary.ok) {
        throw new DemoFailedError(`cycle ${index + 1} failed: ${summary.error ?? 'unknown error'}`);
      }

      const unwatchedListed = listedIds.filter((id) => !watched.has(id)).length;
      print(`[${index + 1}/${story.steps.length}] ${step.title}`);
      print(
        `      listed ${summary.listed} (${unwatchedListed} nobody watches: not fetched) · checked ${summary.checked} · upstream calls ${summary.upstreamCalls}, errors ${summary.upstreamErrors}`,
      );
      const events = await queryRows<{ type: EventType; place: string; title: string }>(
        ctx.db,
        sql`SELECT e.type, coalesce(p.name, e.place_id) AS place, e.record->>'title' AS title
            FROM events e LEFT JOIN places p ON p.id = e.place_id
            WHERE e.cycle_id = ${summary.cycle} ORDER BY e.id`,
      );
      if (events.length === 0) print('      no change');
      for (const e of events) {
        print(`      detected  ${e.type.padEnd(8)} ${e.place}  ${e.title}`);
      }
      for (const mail of smtp.messages.slice(mailsBefore)) {
        print(`      email     ${mail.envelope.to.join(', ')}  ${mail.subject ?? '(no subject)'}`);
      }
      for (const request of hooks.requests.slice(hooksBefore)) {
        const body = describeWebhook(request.json);
        print(
          `      webhook   ${request.path.padEnd(PATH_WIDTH)}  ${body}  ${request.verified ? 'signature verified' : `SIGNATURE NOT VERIFIED (${request.verifyError ?? 'unknown'})`}`,
        );
      }
      // What the WeCom group sees, as posted (markdown).
      for (const post of robot.posts.slice(robotBefore)) {
        print(`      wecom     广东值班群 posted:`);
        for (const line of post.content.split('\n')) print(`        │ ${line}`);
      }
      const byChannel = await notificationsByChannel(ctx.db, summary.cycle);
      print(
        `      delivered ${byChannel.length ? byChannel.map((d) => `${d.channel} ${d.count} ${d.status}`).join(' · ') : 'nothing: no subscriber is owed a notification'}`,
      );
    }

    await releaseQuietHours({ ctx, clock, redis: runtime.redis, smtp, cycles, print });

    const report = await summarize({
      ctx,
      cycles,
      mailDir: options.mailDir,
      emailsSaved: smtp.messages.length,
      webhooks: {
        received: hooks.requests.length,
        verified: hooks.requests.filter((r) => r.verified).length,
      },
      unwatchedFetches: Object.entries(sim.requests().byOperationLocation.warningNow)
        .filter(([id]) => unwatchedIds.has(id))
        .reduce((sum, [, n]) => sum + n, 0),
    });
    printSummary(print, report);
    print('');
    print(
      `finished in ${((Date.now() - startedAt) / 1000).toFixed(1)} s; stopping everything the demo started.`,
    );
    return report;
  } finally {
    await cleanup();
  }
}

/** `warning.new 湛江` from a webhook body (docs/messages.md), whatever the body turned out to be. */
function describeWebhook(json: unknown): string {
  const body = json as { type?: unknown; data?: { location?: { name?: unknown } } } | undefined;
  const type = typeof body?.type === 'string' ? body.type : '(not a notification)';
  const place = body?.data?.location?.name;
  return `${type.padEnd(15)} ${typeof place === 'string' ? place : ''}`;
}

async function summarize(input: {
  ctx: { db: Parameters<typeof queryRows>[0] };
  cycles: CycleSummary[];
  mailDir: string;
  emailsSaved: number;
  webhooks: { received: number; verified: number };
  unwatchedFetches: number;
}): Promise<DemoReport> {
  const eventRows = await queryRows<{ type: EventType; count: number }>(
    input.ctx.db,
    sql`SELECT type, count(*)::int AS count FROM events GROUP BY type`,
  );
  const events = Object.fromEntries(
    EVENT_TYPES.map((t) => [t, eventRows.find((r) => r.type === t)?.count ?? 0]),
  ) as Record<EventType, number>;
  const deliveries = await notificationsByChannel(input.ctx.db);
  return {
    cycles: input.cycles,
    events,
    deliveries,
    emailsSaved: input.emailsSaved,
    mailDir: input.mailDir,
    webhooks: input.webhooks,
    unwatchedFetches: input.unwatchedFetches,
  };
}

const STATUSES = ['sent', 'retrying', 'dead', 'pending'] as const;

function printSummary(print: (line: string) => void, report: DemoReport): void {
  print('');
  print('Summary');
  print('');
  print('  events by type');
  const eventTable = formatTable(
    [report.events],
    EVENT_TYPES.map((t) => ({
      header: t,
      value: (r: Record<EventType, number>) => r[t],
      align: 'right' as const,
    })),
  );
  for (const line of eventTable.split('\n')) print(`    ${line}`);
  print('');
  print('  deliveries by channel and status');
  const channels = CHANNELS_SHOWN.map((channel) => ({
    channel,
    counts: Object.fromEntries(
      STATUSES.map((s) => [
        s,
        report.deliveries.find((d) => d.channel === channel && d.status === s)?.count ?? 0,
      ]),
    ) as Record<(typeof STATUSES)[number], number>,
  }));
  const deliveryTable = formatTable(channels, [
    { header: 'channel', value: (r) => r.channel },
    ...STATUSES.map((s) => ({
      header: s,
      value: (r: (typeof channels)[number]) => r.counts[s],
      align: 'right' as const,
    })),
  ]);
  for (const line of deliveryTable.split('\n')) print(`    ${line}`);
  print('');
  print(`  emails saved       ${report.emailsSaved} .eml files in ${report.mailDir}`);
  print(
    `  webhooks verified  ${report.webhooks.verified} of ${report.webhooks.received} requests (Standard Webhooks signatures)`,
  );
  print(`  unwatched places   fetched ${report.unwatchedFetches} times`);
}

/**
 * The night shift's quiet hours end after the story: what they held goes out as one "while you
 * were away" email, sent by the next cycle (as any `qwn poll --once` after the end sends it). The
 * demo moves its clock there instead of waiting ten minutes.
 */
async function releaseQuietHours(input: {
  ctx: Runtime['ctx'];
  clock: StoryClock;
  redis: Runtime['redis'];
  smtp: {
    messages: readonly { subject?: string | undefined; raw: Buffer; envelope: { to: string[] } }[];
  };
  cycles: CycleSummary[];
  print: (line: string) => void;
}): Promise<void> {
  const { ctx, smtp, print } = input;
  const row = await heldForQuietHours(ctx.db);
  if (!row) return;
  const due = new Date(row.due);
  print(
    `[after] the night shift's quiet hours end at ${shanghaiClock(due)} (Asia/Shanghai): ${row.n} notification${row.n === 1 ? '' : 's'} held; the demo's clock moves there`,
  );
  input.clock.moveTo(new Date(due.getTime() + 1000));
  const mailsBefore = smtp.messages.length;
  const summary = await runCycleOnce(ctx, input.redis, { timeoutMs: 30_000 });
  input.cycles.push(summary);
  print(
    `      released ${summary.messages.released} held message${summary.messages.released === 1 ? '' : 's'}`,
  );
  for (const mail of smtp.messages.slice(mailsBefore)) {
    print(`      email     ${mail.envelope.to.join(', ')}  ${mail.subject ?? '(no subject)'}`);
    const heading = firstTextLine(mail.raw);
    if (heading) print(`                ${heading}`);
  }
}

/** The first line of an email's text part (base64, as the mailer writes it). */
function firstTextLine(raw: Buffer): string | undefined {
  const text = raw.toString('utf8');
  const part =
    /Content-Type: text\/plain[^\r\n]*\r?\nContent-Transfer-Encoding: base64\r?\n\r?\n([A-Za-z0-9+/=\r\n]+)/.exec(
      text,
    );
  if (!part?.[1]) return undefined;
  return Buffer.from(part[1].replace(/\s+/g, ''), 'base64').toString('utf8').split(/\r?\n/)[0];
}
