import { Queue, type JobsOptions } from 'bullmq';
import { Redis } from 'ioredis';

/**
 * The BullMQ side: a queue per job kind, and deliveries in a queue per channel. Redis only
 * carries ids; what a job needs is read from Postgres, which stays the truth
 * (docs/design.md, invariant 1).
 */
export const QUEUE_NAMES = {
  poll: 'poll',
  check: 'check',
  deliverWebhook: 'deliver-webhook',
  deliverEmail: 'deliver-email',
  sweep: 'sweep',
} as const;
export type QueueName = (typeof QUEUE_NAMES)[keyof typeof QUEUE_NAMES];

/**
 * Both channels' deliver queues. Each has its own workers, so a slow or stalled mail server
 * never holds webhook sends back (nor the reverse), and each channel drains at its own pace.
 */
export const DELIVER_QUEUES = [QUEUE_NAMES.deliverWebhook, QUEUE_NAMES.deliverEmail] as const;

export function isDeliverQueue(name: QueueName): boolean {
  return (DELIVER_QUEUES as readonly QueueName[]).includes(name);
}

/** Each queue under its key in QUEUE_NAMES (`queues.deliverEmail`), and by its BullMQ name. */
export type Queues = Readonly<Record<keyof typeof QUEUE_NAMES, Queue>> & {
  readonly byName: Readonly<Record<QueueName, Queue>>;
  readonly prefix: string;
  close(): Promise<void>;
};

/**
 * Bounded job history: enough to inspect recent work without letting Redis grow without end
 * (BullMQ's production guide). Failed jobs are kept longer for post-mortems.
 */
export const DEFAULT_JOB_OPTIONS: JobsOptions = {
  removeOnComplete: { count: 1000, age: 3600 },
  removeOnFail: { count: 5000, age: 7 * 24 * 3600 },
};

/**
 * Workers block on Redis, so their connections must never give up on a command
 * (`maxRetriesPerRequest: null`, required by BullMQ for workers).
 */
export function createRedis(url: string): Redis {
  return new Redis(url, { maxRetriesPerRequest: null, enableReadyCheck: true });
}

/**
 * Attempts cover infrastructure failures (Postgres unreachable mid-job). Upstream and delivery
 * failures are handled inside the jobs: a failed check waits for the next cycle, a failed send
 * is rescheduled through the ledger.
 */
const ATTEMPTS: Record<QueueName, number> = {
  poll: 2,
  check: 3,
  'deliver-webhook': 3,
  'deliver-email': 3,
  sweep: 1,
};

/**
 * Deletes every key under a BullMQ prefix (a demo's, a benchmark's or a test's), never touching
 * another prefix on the same Redis. Returns how many keys went.
 */
export async function deletePrefixKeys(redis: Redis, prefix: string): Promise<number> {
  let deleted = 0;
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
    cursor = next;
    if (keys.length > 0) deleted += await redis.del(...keys);
  } while (cursor !== '0');
  return deleted;
}

export function createQueues(connection: Redis, prefix: string): Queues {
  const make = (name: QueueName) =>
    new Queue(name, {
      connection,
      prefix,
      defaultJobOptions: {
        ...DEFAULT_JOB_OPTIONS,
        attempts: ATTEMPTS[name],
        backoff: { type: 'exponential', delay: 2000 },
      },
    });
  const entries = Object.entries(QUEUE_NAMES) as [keyof typeof QUEUE_NAMES, QueueName][];
  const byKey = Object.fromEntries(entries.map(([key, name]) => [key, make(name)])) as Record<
    keyof typeof QUEUE_NAMES,
    Queue
  >;
  const byName = Object.fromEntries(entries.map(([key, name]) => [name, byKey[key]])) as Record<
    QueueName,
    Queue
  >;
  return {
    ...byKey,
    byName,
    prefix,
    async close() {
      await Promise.all(Object.values(byKey).map((q) => q.close()));
    },
  };
}

// Job ids must not contain ':' (BullMQ uses it as its key separator); uuids and Location IDs
// never do.

/** One check per place per cycle, however often the poll job is retried. */
export function checkJobId(cycleId: string, placeId: string): string {
  return `${cycleId}_${placeId}`;
}

/**
 * One deliver job per delivery row and attempt: the row's id plus how many attempts it has had,
 * so a retry scheduled after a failure never collides with the finished job of the last attempt.
 */
export function deliverJobId(deliveryId: string, attempts: number): string {
  return `${deliveryId}_${attempts}`;
}
