import { createHmac, randomUUID } from 'node:crypto';
import { Worker } from 'bullmq';
import { Redis } from 'ioredis';
import nodemailer from 'nodemailer';
import pg from 'pg';
import { Agent } from 'undici';
import { MAIL_POOL_CONNECTIONS } from '../src/channels/email.js';
import { composeMime } from '../src/channels/mime.js';
import { renderEmail, webhookPayload } from '../src/domain/render.js';
import { webhookSecretFor } from './data.js';
import { sampleNotification } from './sample.js';

/**
 * One process of a raw-limit measurement (bench/limits.ts starts as many as the pipeline has
 * worker processes). Each does the bare operation the pipeline's hot path is built on, as fast
 * as it can, with the pipeline's own concurrency: no-op BullMQ jobs, signed undici POSTs,
 * pooled nodemailer sends, batched inserts, or the POSTs and the sends at once, as a worker
 * process sends both channels. Protocol over IPC: 'ready' → wait for 'go' → work → 'done' with
 * the result; the BullMQ worker instead runs until 'stop'.
 */

type UndiciTask = {
  kind: 'undici';
  origin: string;
  requests: number;
  concurrency: number;
  index: number;
};
type SmtpTask = { kind: 'smtp'; url: string; messages: number; concurrency: number };

export type LimitTask =
  | { kind: 'bullmq'; redisUrl: string; prefix: string; queue: string; concurrency: number }
  | UndiciTask
  | SmtpTask
  | { kind: 'both'; webhook: UndiciTask; email: SmtpTask }
  | { kind: 'insert'; databaseUrl: string; rows: number; batch: number; concurrency: number };

export interface LimitResult {
  count: number;
  errors: number;
  /** From 'go' to this process's last unit. */
  ms: number;
  /** User + system CPU time of this process from 'go' to its last unit. */
  cpuMs: number;
  firstError?: string;
}

/** What a run of lanes did; the caller times the CPU of the whole process around it. */
export type LaneResult = Omit<LimitResult, 'cpuMs'>;

/**
 * What a 'both' process did, by channel, each timed from 'go' to its own last unit; the CPU
 * time is the process's, from 'go' until both are done.
 */
export interface BothResult {
  webhook: LaneResult;
  email: LaneResult;
  cpuMs: number;
}

/** A prepared measurement: everything set up, waiting to be run. */
interface Prepared<R = LaneResult> {
  run(): Promise<R>;
  close(): Promise<void>;
}

/** User + system CPU time of this process since `start`, in milliseconds. */
function cpuMsSince(start: NodeJS.CpuUsage): number {
  const used = process.cpuUsage(start);
  return (used.user + used.system) / 1000;
}

/** Runs `work` on `concurrency` lanes until `total` units are done. */
async function lanes(
  total: number,
  concurrency: number,
  work: (i: number) => Promise<void>,
): Promise<LaneResult> {
  let next = 0;
  let errors = 0;
  let firstError: string | undefined;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: Math.min(concurrency, total) }, async () => {
      while (next < total) {
        const i = next++;
        try {
          await work(i);
        } catch (err) {
          errors += 1;
          firstError ??= err instanceof Error ? err.message : String(err);
        }
      }
    }),
  );
  return {
    count: total - errors,
    errors,
    ms: performance.now() - started,
    ...(firstError ? { firstError } : {}),
  };
}

function waitFor(type: string): Promise<void> {
  return new Promise((resolve) => {
    const onMessage = (m: { type?: string }) => {
      if (m.type !== type) return;
      process.off('message', onMessage);
      resolve();
    };
    process.on('message', onMessage);
  });
}

function prepareUndici(t: UndiciTask): Prepared {
  const agent = new Agent();
  const key = Buffer.from(webhookSecretFor(t.index).slice('whsec_'.length), 'base64');
  const body = JSON.stringify(webhookPayload(sampleNotification(randomUUID())));
  return {
    run: () =>
      lanes(t.requests, t.concurrency, async () => {
        const id = randomUUID();
        const ts = String(Math.floor(Date.now() / 1000));
        const signature = createHmac('sha256', key).update(`${id}.${ts}.${body}`).digest('base64');
        const response = await agent.request({
          origin: t.origin,
          path: `/raw/${t.index}`,
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            'webhook-id': id,
            'webhook-timestamp': ts,
            'webhook-signature': `v1,${signature}`,
          },
          body,
        });
        await response.body.dump();
        if (response.statusCode >= 300) throw new Error(`status ${response.statusCode}`);
      }),
    close: () => agent.close(),
  };
}

function prepareSmtp(t: SmtpTask): Prepared {
  // The same pool shape as the pipeline's mailer (src/channels/email.ts).
  const transport = nodemailer.createTransport({
    url: t.url,
    pool: true,
    maxConnections: MAIL_POOL_CONNECTIONS,
  });
  // The mailer hands nodemailer a message it composed itself (src/channels/mime.ts), so the bare
  // operation is a pooled send of a ready message: composed once here, sent over and over.
  const id = randomUUID();
  const { subject, text, html } = renderEmail(sampleNotification(id));
  const raw = composeMime({
    from: { name: 'qwn bench', address: 'alerts@bench.qwn.test' },
    to: 'raw@bench.qwn.test',
    subject,
    messageId: `<raw-${id}@qwn>`,
    date: new Date(),
    headers: {},
    text,
    html,
    boundary: `qwn-alt-${id}`,
  });
  const envelope = { from: 'alerts@bench.qwn.test', to: ['raw@bench.qwn.test'] };
  return {
    run: () =>
      lanes(t.messages, t.concurrency, async () => {
        await transport.sendMail({ envelope, raw });
      }),
    close: () => {
      transport.close();
      return Promise.resolve();
    },
  };
}

/** Runs a prepared measurement once 'go' arrives, with this process's CPU time from then on. */
async function whenGo<R extends object>(
  preparing: Prepared<R> | Promise<Prepared<R>>,
): Promise<R & { cpuMs: number }> {
  const prepared = await preparing;
  process.send?.({ type: 'ready' });
  await waitFor('go');
  const cpuAtGo = process.cpuUsage();
  try {
    const result = await prepared.run();
    return { ...result, cpuMs: cpuMsSince(cpuAtGo) };
  } finally {
    await prepared.close();
  }
}

/** Both channels at once, as a worker process sends them: each with its own lanes. */
function prepareBoth(t: Extract<LimitTask, { kind: 'both' }>): Prepared<Omit<BothResult, 'cpuMs'>> {
  const webhook = prepareUndici(t.webhook);
  const email = prepareSmtp(t.email);
  return {
    run: async () => {
      const [w, e] = await Promise.all([webhook.run(), email.run()]);
      return { webhook: w, email: e };
    },
    close: async () => {
      await Promise.all([webhook.close(), email.close()]);
    },
  };
}

async function prepareInsert(t: Extract<LimitTask, { kind: 'insert' }>): Promise<Prepared> {
  const pool = new pg.Pool({ connectionString: t.databaseUrl, max: t.concurrency });
  const subscriber = randomUUID();
  await pool.query('SELECT 1');
  const batches = Math.ceil(t.rows / t.batch);
  return {
    run: async () => {
      let rows = 0;
      const result = await lanes(batches, t.concurrency, async (b) => {
        const n = Math.min(t.batch, t.rows - b * t.batch);
        const ids = Array.from({ length: n }, (_, i) => `w${process.pid}-${b}-${i}`);
        // The shape of a delivery row insert: uuid default, a unique key, a few text columns.
        await pool.query(
          `INSERT INTO bench_raw_insert (subscriber_id, warning_id, event_type, channel, place_id)
           SELECT $1, w, 'new', 'webhook', '101210101' FROM unnest($2::text[]) AS t(w)`,
          [subscriber, ids],
        );
        rows += n;
      });
      return { ...result, count: rows };
    },
    close: () => pool.end(),
  };
}

async function runBullmq(t: Extract<LimitTask, { kind: 'bullmq' }>): Promise<LaneResult> {
  const connection = new Redis(t.redisUrl, { maxRetriesPerRequest: null });
  let count = 0;
  const worker = new Worker(
    t.queue,
    () => {
      count += 1;
      return Promise.resolve();
    },
    { connection, prefix: t.prefix, concurrency: t.concurrency },
  );
  worker.on('error', () => undefined);
  await worker.waitUntilReady();
  process.send?.({ type: 'ready' });
  await waitFor('stop');
  await worker.close();
  connection.disconnect();
  return { count, errors: 0, ms: 0 };
}

const task = JSON.parse(process.argv[2] ?? '{}') as LimitTask;
const run = {
  undici: (t: UndiciTask) => whenGo(prepareUndici(t)),
  smtp: (t: SmtpTask) => whenGo(prepareSmtp(t)),
  both: (t: Extract<LimitTask, { kind: 'both' }>) => whenGo(prepareBoth(t)),
  insert: (t: Extract<LimitTask, { kind: 'insert' }>) => whenGo(prepareInsert(t)),
  bullmq: runBullmq,
} as const;
const result = await (run[task.kind] as (t: LimitTask) => Promise<LaneResult | BothResult>)(task);
process.send?.({ type: 'done', result }, () => process.exit(0));
