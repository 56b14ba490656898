import type { ChannelPause } from '../channels/channel-pause.js';
import type { Channel } from '../channels/kinds.js';
import type { Mailer } from '../channels/email.js';
import type { RobotRateLimiter } from '../channels/robot-rate-limit.js';
import type { RobotSender } from '../channels/robot.js';
import type { WebhookSender } from '../channels/webhook.js';
import type { Config } from '../config.js';
import type { Db } from '../db/client.js';
import type { Logger } from '../logger.js';
import type { OutageLog } from '../ops/outage-log.js';
import type { QWeatherClient } from '../qweather/client.js';
import type { QueueName, Queues } from './queues.js';

/**
 * Everything a job touches, built once by the composition root (the CLI command) and handed to
 * every processor. Tests hand in real adapters pointed at test servers.
 */
export interface PipelineContext {
  readonly config: Config;
  readonly db: Db;
  readonly upstream: Pick<QWeatherClient, 'warningList' | 'warningNow' | 'weatherAlert'>;
  readonly queues: Queues;
  readonly logger: Logger;
  readonly mailer: Mailer;
  readonly webhooks: WebhookSender;
  /** Chat robots (docs/messages.md): the sender, and their rate limits shared by every worker. */
  readonly robots: { readonly limiter: RobotRateLimiter; readonly sender: RobotSender };
  /** Paused while the SMTP server refuses the login (src/channels/channel-pause.ts). */
  readonly emailPause: ChannelPause;
  /** Redis connection failures, logged once per outage (src/ops/outage-log.ts). */
  readonly redisOutage: OutageLog;
  /** The clock, passed in so that tests can fix it. */
  readonly now: () => Date;
  readonly random: () => number;
  /** Called with every upstream failure, so health can report auth and retirement problems. */
  readonly onUpstreamResult?: (operation: string, error: unknown) => void;
  /** Sees every job that finished, for `/metrics` (src/ops/metrics.ts); absent in `poll --once`. */
  readonly metrics?: JobObserver;
  /**
   * Sends from this process the first attempts that its checks commit (src/pipeline/
   * first-attempts.ts). Absent where the process runs no deliver worker: BullMQ carries them.
   */
  readonly firstAttempts?: FirstAttemptSender;
}

/** A batch of first attempts its check planned (`first_job_id`), owned by this process's lease. */
export interface FirstAttemptBatch {
  jobId: string;
  channel: Channel;
  messageIds: string[];
}

export interface FirstAttemptSender {
  /** The channels whose first attempts this process sends itself. */
  readonly channels: readonly Channel[];
  /** Starts sending the batches, after the commit that wrote them; returns at once. */
  send(batches: readonly FirstAttemptBatch[]): void;
}

export interface JobObserver {
  jobCompleted(queue: QueueName, payload: unknown, result: unknown): void;
}

/**
 * Asked before every warning call (the runtime wraps `upstream` with it), so that neither the
 * poll nor a check queued behind a refused key asks QWeather again every cycle (src/ops).
 */
export interface UpstreamGate {
  /** Throws (without calling the upstream) while calls are held back after an auth failure. */
  assertCallAllowed(operation: string): void;
}
