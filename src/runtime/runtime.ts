import { ChannelPause } from '../channels/channel-pause.js';
import { createMailer } from '../channels/email.js';
import { createRobotRateLimiter } from '../channels/robot-rate-limit.js';
import { createRobotSender } from '../channels/robot.js';
import { createWebhookSender } from '../channels/webhook.js';
import { MissingSettingError, type Config } from '../config.js';
import { openPostgres, type Database } from '../db/client.js';
import { registerSecret, type Logger } from '../logger.js';
import { OutageLog } from '../ops/outage-log.js';
import { createClientFromConfig } from '../qweather/client.js';
import { legacyHostWarning } from '../qweather/hosts.js';
import type { JobObserver, PipelineContext, UpstreamGate } from './context.js';
import { EMAIL_DELIVER_JOBS } from '../channels/registry.js';
import { createQueues, createRedis } from './queues.js';
import type { Redis } from 'ioredis';

export interface Runtime {
  readonly ctx: PipelineContext;
  readonly redis: Redis;
  readonly database: Database;
  close(): Promise<void>;
}

/** The upstream of a runtime built for delivering only: any call is a configuration mistake. */
function withoutUpstream(): PipelineContext['upstream'] & { close(): Promise<void> } {
  const refuse = () =>
    Promise.reject(new MissingSettingError('this command has no upstream (QWEATHER_API_URL)'));
  return {
    warningList: refuse,
    warningNow: refuse,
    weatherAlert: refuse,
    close: () => Promise.resolve(),
  };
}

/** Every warning call asks the gate first: one place, so no caller can forget it. */
function gated(
  upstream: PipelineContext['upstream'],
  gate: UpstreamGate,
): PipelineContext['upstream'] {
  return {
    warningList: async (query) => {
      gate.assertCallAllowed('warningList');
      return upstream.warningList(query);
    },
    warningNow: async (query) => {
      gate.assertCallAllowed('warningNow');
      return upstream.warningNow(query);
    },
    weatherAlert: async (query) => {
      gate.assertCallAllowed('weatherAlert');
      return upstream.weatherAlert(query);
    },
  };
}

/**
 * The composition root shared by `qwn poll`, `qwn worker` and the demo: real Postgres, Redis,
 * upstream client and channels, built from the one Config.
 */
export function createRuntime(
  config: Config,
  logger: Logger,
  options: {
    database?: Database;
    onUpstreamResult?: PipelineContext['onUpstreamResult'];
    now?: () => Date;
    metrics?: JobObserver;
    upstreamGate?: UpstreamGate;
    /** Ledger commands only deliver: they need no upstream, so no QWEATHER_API_URL. */
    upstream?: 'required' | 'none';
  } = {},
): Runtime {
  const needsUpstream = options.upstream !== 'none';
  if (needsUpstream && !config.qweather.apiUrl) {
    throw new MissingSettingError('QWEATHER_API_URL is not set');
  }
  if (!options.database && !config.databaseUrl) {
    throw new MissingSettingError('DATABASE_URL is not set');
  }
  if (needsUpstream) {
    for (const [variable, url] of [
      ['QWEATHER_API_URL', config.qweather.apiUrl],
      ['QWEATHER_GEO_URL', config.qweather.geoUrl],
    ] as const) {
      const warning = legacyHostWarning(variable, url);
      // Once per process: the worker and `poll --once` build one runtime each.
      if (warning) logger.warn({ variable }, warning);
    }
  }
  registerSecret(config.qweather.apiKey);
  registerSecret(config.qweather.jwt?.privateKeyPem);
  if (config.smtpUrl) {
    const password = /^smtps?:\/\/[^:/@]*:([^@]*)@/.exec(config.smtpUrl)?.[1];
    registerSecret(password ? decodeURIComponent(password) : undefined);
  }

  const database =
    options.database ??
    openPostgres(config.databaseUrl!, {
      // A check holds a connection for its transaction, a deliver job of either channel's
      // queue one for its claim, and the sent marks one more.
      poolSize: Math.max(
        10,
        config.checkConcurrency +
          Math.ceil((config.deliveryConcurrency + EMAIL_DELIVER_JOBS) / 2) +
          1,
      ),
      // Kept from one poll to the next: a connection's first statements cost its backend the
      // most (start-up, catalog caches, five custom plans of each prepared statement before
      // a generic one), and closing them after 30 s idle paid that again every cycle.
      idleTimeoutMs: (config.pollIntervalSeconds + 60) * 1000,
    });
  const redis = createRedis(config.redisUrl);
  const redisOutage = new OutageLog(logger, 'redis');
  redis.on('error', (err) => redisOutage.failed(err));
  redis.on('ready', () => redisOutage.recovered());
  const queues = createQueues(redis, config.queuePrefix);
  // Each Queue re-emits its connection's errors, and BullMQ prints them with console.error
  // when nobody listens: the connection's listener above has logged them already, once.
  for (const queue of Object.values(queues.byName)) queue.on('error', () => undefined);
  const client = needsUpstream ? createClientFromConfig(config, logger) : withoutUpstream();
  const upstream = options.upstreamGate ? gated(client, options.upstreamGate) : client;
  const mailer = createMailer({ smtpUrl: config.smtpUrl, from: config.mailFrom, logger });
  const webhooks = createWebhookSender({
    allowPrivate: config.webhookAllowPrivate,
    timeoutMs: config.webhookTimeoutMs,
    logger,
  });
  const robots = {
    // In the queues' Redis under their prefix: every worker of the deployment counts one window,
    // on Redis's clock unless the runtime was given one (a test moving time).
    limiter: createRobotRateLimiter({
      redis,
      prefix: `${config.queuePrefix}:`,
      ...(options.now ? { now: () => options.now!().getTime() } : {}),
    }),
    sender: createRobotSender({
      allowPrivate: config.webhookAllowPrivate,
      timeoutMs: config.webhookTimeoutMs,
      logger,
    }),
  };
  const now = options.now ?? (() => new Date());
  const ctx: PipelineContext = {
    config,
    db: database.db,
    upstream,
    queues,
    logger,
    mailer,
    webhooks,
    robots,
    emailPause: new ChannelPause(now),
    redisOutage,
    now,
    random: Math.random,
    ...(options.onUpstreamResult ? { onUpstreamResult: options.onUpstreamResult } : {}),
    ...(options.metrics ? { metrics: options.metrics } : {}),
  };
  return {
    ctx,
    redis,
    database,
    async close() {
      await queues.close();
      await Promise.allSettled([
        client.close(),
        mailer.close(),
        webhooks.close(),
        robots.sender.close(),
      ]);
      redis.disconnect();
      if (!options.database) await database.close();
    },
  };
}
