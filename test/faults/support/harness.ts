import { spawn, type ChildProcess } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'drizzle-orm';
import { Redis } from 'ioredis';
import { queryRows } from '../../../src/db/client.js';
import type { Runtime } from '../../../src/runtime/runtime.js';
import { messageIdFor } from '../../../src/channels/email.js';
import { runSweep } from '../../../src/pipeline/sweep.js';
import { pointAt } from '../../../src/domain/points.js';
import { v1IdOf } from '../../../src/simulator/v7-in-v1.js';
import { waitUntil } from '../../support/wait.js';
import type { ScriptedResponse } from '../../support/webhook-receiver.js';
import {
  startPipelineHarness,
  type DeliveryRow,
  type PipelineHarness,
} from '../../support/pipeline.js';
import {
  owedBy,
  owedKey,
  planStorm,
  type Owed,
  type StormOptions,
  type StormPlan,
} from './storm.js';

export { closedPort } from '../../support/net.js';
export { waitUntil } from '../../support/wait.js';

/**
 * The fault harness: a storm (test/faults/support/storm.ts) on real parts — `qwn worker` child
 * processes, the simulator, an SMTP sink and a webhook receiver from test/support/pipeline.ts —
 * plus the means to break them and the accounting of what came out.
 */

const ROOT = new URL('../../../', import.meta.url).pathname;

export interface WorkerProcess {
  readonly child: ChildProcess;
  readonly name: string;
  /** The last lines the process wrote (its warn and error logs). */
  logTail(): string;
  /** Whether it exited without being told to (a crash). */
  crashed(): boolean;
  kill9(): Promise<void>;
  /** SIGTERM, then SIGKILL if it has not exited within `graceMs`. Resolves with the exit code. */
  stop(graceMs?: number): Promise<number | null>;
}

/** A ledger row, its subscriber named by address (email, or webhook path) as the storm names it. */
export type LedgerRow = DeliveryRow;

export interface Outcome {
  seed: number;
  owed: number;
  delivered: number;
  /** Owed notifications that ended `dead` where the fault made that legitimate. */
  dead: number;
  lost: string[];
  /** Ledger rows for notifications nobody owed. */
  unexpected: string[];
  /** Owed but dead where the fault did not excuse it, or legitimately dead but without a reason. */
  wronglyDead: string[];
  /** Sends accepted by the receivers (emails taken, webhook requests answered 200). */
  sends: number;
  /** Extra sends of a notification under the same id: the at-least-once window. */
  duplicates: number;
  /** Notifications received under more than one webhook-id or Message-ID. */
  splitIds: string[];
  /** Notifications the ledger marks sent whose message (by its id) no receiver accepted. */
  unreceived: string[];
  /** Events by type in the store. */
  events: Record<string, number>;
  deadReasons: Record<string, number>;
  /** Worker processes that exited by themselves, with their last log lines. */
  crashes: string[];
}

export interface SettleOptions {
  timeoutMs?: number;
  /** The rows counted must exist for at least these owed keys before settling can end. */
  requireRows?: boolean;
  /** Owed notifications the fault may legitimately leave dead (or never created). */
  mayBeDead?: (owed: Owed) => boolean;
}

export interface FaultRun {
  readonly seed: number;
  readonly h: PipelineHarness;
  readonly plan: StormPlan;
  readonly owed: Map<string, Owed>;
  /** An in-process runtime on the same database and prefix, for the sweeper and queue access. */
  readonly runtime: Runtime;
  readonly workers: WorkerProcess[];
  startWorker(extraEnv?: Record<string, string>): WorkerProcess;
  /** Serves phase `n` of the storm (a full state: places not in it have no warnings). */
  showPhase(n: number): void;
  /** Resolves once every warning of phase `n` is in the store (detected by some check, at one row or more). */
  waitForPhase(n: number, timeoutMs?: number): Promise<void>;
  /**
   * Moves the ledger's clock forward until nothing is left to do: retrying rows made due now
   * (with their delayed jobs promoted), claims held longer than any live send expired, and the
   * sweeper run with no grace. Production schedules are untouched; only time is skipped.
   */
  settle(options?: SettleOptions): Promise<void>;
  ledger(): Promise<LedgerRow[]>;
  outcome(mayBeDead?: (owed: Owed) => boolean): Promise<Outcome>;
  /** Scripts the webhook receiver's answers on a path (counted, so failures are not sends). */
  scriptHook(path: string, responses: readonly ScriptedResponse[]): void;
  /** A Redis connection for fault injection (closed with the run). */
  redis(): Redis;
  close(): Promise<void>;
}

function spawnWorker(name: string, env: Record<string, string>): WorkerProcess {
  const child = spawn('node', ['bin/qwn.js', 'worker'], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  // The worker logs (pino) go to stdout; keep the tail of both streams for failure reports.
  const lines: string[] = [];
  const keep = (chunk: string) => {
    lines.push(...chunk.split('\n').filter(Boolean));
    if (lines.length > 200) lines.splice(0, lines.length - 200);
  };
  for (const stream of [child.stdout, child.stderr]) {
    stream?.setEncoding('utf8');
    stream?.on('data', keep);
  }
  let told = false;
  const exited = new Promise<number | null>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve(child.exitCode);
    else child.once('exit', (code) => resolve(code));
  });
  return {
    child,
    name,
    logTail: () => lines.slice(-40).join('\n'),
    crashed: () => !told && (child.exitCode !== null || child.signalCode !== null),
    async kill9() {
      told = true;
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exited;
    },
    async stop(graceMs = 30_000) {
      told = true;
      if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
      const code = await exited;
      clearTimeout(timer);
      return code;
    },
  };
}

/**
 * Warning id in an email: the last id of the fields block (after any supersedes), a v7 id (26
 * digits) or one the simulator gave a v1 alert (`v1IdOf`).
 */
function warningIdInText(text: string | undefined): string {
  const ids = text?.match(/\b(?:\d{26}|V1[0-9A-F]{18})\b/g);
  return ids?.[ids.length - 1] ?? '?';
}

export interface FaultRunOptions extends StormOptions {
  env?: Record<string, string>;
  /**
   * How the email subscribers group (default `'none'`: one email per notification, counted and
   * keyed by content). With `'cycle'`, the email default, an email carries what one cycle owes
   * its subscriber: emails are then counted by Message-ID, and a notification is in one message
   * by the ledger's shape (each row names one message).
   */
  emailGroup?: 'none' | 'cycle';
  /**
   * The upstream the workers poll. Default: `QWEATHER_ALERT_SOURCE` unset, so `auto`, which
   * polls v7 until it is retired. With `'v1'` every watched place is checked at its point every
   * cycle, and the storm's warnings come back as Weather Alert v1 alerts under the simulator's
   * v1 ids (`v1IdOf`): what is owed is keyed by those. `'handover'` is `auto` with v7 retired
   * by the test once phase 0 is detected: phase 0's warnings are owed under their v7 ids, what
   * later phases bring under v1's.
   */
  source?: 'v1' | 'handover';
}

export async function startFaultRun(
  seed: number,
  options: FaultRunOptions = {},
): Promise<FaultRun> {
  process.stdout.write(`seed ${seed}\n`);
  const plan = planStorm(seed, options);
  const pointOf = new Map(plan.places.map((p) => [p.id, pointAt(p.lat, p.lon)?.key]));
  const toldFromV7 = new Set(
    options.source === 'handover'
      ? [...(plan.phases[0]?.values() ?? [])].flat().map((w) => w.id)
      : [],
  );
  const v7Ids = new Set(
    plan.phases.flatMap((phase) => [...phase.values()].flat().map((w) => w.id)),
  );
  // A v7 warning served through v1 comes back under its v1 id; an area alert is v1's already.
  const storedId = (id: string) =>
    v7Ids.has(id) &&
    (options.source === 'v1' || (options.source === 'handover' && !toldFromV7.has(id)))
      ? v1IdOf(id)
      : id;
  const owed = new Map(
    [...owedBy(plan).values()].map((o) => {
      const stored = { ...o, warningId: storedId(o.warningId) };
      return [owedKey(o.subscriber, stored.warningId, o.eventType), stored] as const;
    }),
  );
  const h = await startPipelineHarness({
    env: {
      POLL_INTERVAL_SECONDS: '1',
      HTTP_PORT: '0',
      LOG_LEVEL: 'warn',
      ...(options.source === 'v1' ? { QWEATHER_ALERT_SOURCE: 'v1' } : {}),
      ...options.env,
    },
  });
  const db = h.database.db;

  // The storm's places and subscriptions, inserted with SQL as an admin would; its subscribers
  // through the pipeline harness, named by their address, the email subscribers grouped as
  // `options.emailGroup` says.
  const emailGroup = options.emailGroup ?? 'none';
  await db.execute(sql`
    INSERT INTO places (id, name, lat, lon)
    SELECT * FROM unnest(${sql.param(plan.places.map((p) => p.id))}::text[],
                         ${sql.param(plan.places.map((p) => p.name))}::text[],
                         ${sql.param(plan.places.map((p) => p.lat))}::float8[],
                         ${sql.param(plan.places.map((p) => p.lon))}::float8[])`);
  for (const s of plan.subscribers) {
    const id =
      s.channel === 'email'
        ? await h.addEmailSubscriber(s.address, [], {}, emailGroup)
        : await h.addWebhookSubscriber(s.address, []);
    await db.execute(sql`
      INSERT INTO subscriptions (subscriber_id, place_id, min_level, types, events)
      SELECT ${id}, place, ${s.filter.minLevel}, ${sql.param(s.filter.types)}::text[],
             ${sql.param(s.filter.events)}::text[]
      FROM unnest(${sql.param(s.places)}::text[]) AS t(place)`);
  }

  const runtime = h.runtime();
  // How many requests per path the scripts answer: the receiver answers a path's requests in
  // arrival order, so those after the scripted ones got the 200 fallback.
  const scripted = new Map<string, number>();
  const acceptedWebhooks = () => {
    const seen = new Map<string, number>();
    return h.hooks.requests.filter((r) => {
      const n = (seen.get(r.path) ?? 0) + 1;
      seen.set(r.path, n);
      return n > (scripted.get(r.path) ?? 0);
    });
  };
  const workers: WorkerProcess[] = [];
  const connections: Redis[] = [];
  let started = 0;

  // Storm subscribers are named by their address, so h.deliveries() names them as owedKey does.
  const ledger = () => h.deliveries();

  const timeTravel = async () => {
    // Retries and held messages (should any subscriber hold them) are due now.
    await db.execute(sql`
      UPDATE messages SET next_attempt_at = now()
      WHERE status IN ('retrying', 'open') AND next_attempt_at > now()`);
    // A cycle message that still collects has no row: its cycle's 60 s are up, for the sweeper.
    await db.execute(sql`
      UPDATE poll_cycles SET started_at = least(started_at, now() - interval '61 seconds')
      WHERE released_at IS NULL`);
    // A claim lasts 120 s; one taken more than 15 s ago belongs to a sender that is gone
    // (every send in these tests answers or times out well within that).
    await db.execute(sql`
      UPDATE messages SET claimed_until = now() - interval '1 second'
      WHERE status IN ('pending', 'retrying') AND claimed_until > now()
        AND claimed_until < now() + interval '105 seconds'`);
    const delayed = [
      ...(await runtime.ctx.queues.deliverWebhook.getDelayed()),
      ...(await runtime.ctx.queues.deliverEmail.getDelayed()),
    ];
    await Promise.all(delayed.map((job) => job.promote().catch(() => undefined)));
    await runSweep(runtime.ctx, { graceSeconds: 0 });
  };

  const run: FaultRun = {
    seed,
    h,
    plan,
    owed,
    runtime,
    workers,
    startWorker(extraEnv = {}) {
      started += 1;
      const worker = spawnWorker(`worker-${started}`, { ...h.env, ...extraEnv });
      workers.push(worker);
      return worker;
    },
    showPhase(n) {
      const phase = plan.phases[n];
      if (!phase) throw new Error(`the storm has no phase ${n}`);
      for (const place of plan.places) h.sim.setWarnings(place.id, phase.get(place.id) ?? []);
      if (options.areaAlerts) h.sim.setAlerts(plan.areaPhases[n]!);
    },
    async waitForPhase(n, timeoutMs = 60_000) {
      const ids = [...(plan.phases[n]?.values() ?? [])].flat().map((r) => storedId(r.id));
      // An area alert is waited for at every point of its area, so that no point skips it.
      const areaRows = (plan.areaPhases[n] ?? []).flatMap((a) => {
        const area = plan.warnings.find((w) => w.id === a.alert.id)!.placeIds;
        const points = new Set(area.map((id) => pointOf.get(id)!));
        return [...points].map((point) => `${a.alert.id} ${point}`);
      });
      await waitUntil(
        async () => {
          const [row] = await queryRows<{ n: number; m: number }>(
            db,
            sql`SELECT count(DISTINCT warning_id) FILTER (WHERE warning_id = ANY(${sql.param(ids)}::text[]))::int AS n,
                       count(*) FILTER (WHERE warning_id || ' ' || place_id = ANY(${sql.param(areaRows)}::text[]))::int AS m
                FROM warnings`,
          );
          return row!.n === ids.length && row!.m === areaRows.length;
        },
        `phase ${n} detected`,
        timeoutMs,
        250,
      );
    },
    async settle(o = {}) {
      const deadline = Date.now() + (o.timeoutMs ?? 90_000);
      const mayBeDead = o.mayBeDead ?? (() => false);
      const required = [...owed.entries()].filter(([, v]) => !mayBeDead(v)).map(([k]) => k);
      let quietRounds = 0;
      while (Date.now() < deadline) {
        const rows = await ledger();
        const open = rows.filter(
          (r) => r.status === 'held' || r.status === 'pending' || r.status === 'retrying',
        );
        const present = new Set(rows.map((r) => owedKey(r.subscriber, r.warning_id, r.event_type)));
        const complete = o.requireRows === false || required.every((k) => present.has(k));
        // Two quiet rounds in a row: nothing open, nothing owed missing, sends drained.
        quietRounds = open.length === 0 && complete ? quietRounds + 1 : 0;
        if (quietRounds >= 2) return;
        if (open.length > 0) await timeTravel();
        await sleep(1000);
      }
    },
    ledger,
    async outcome(mayBeDead = () => false) {
      const rows = await ledger();
      const byKey = new Map(
        rows.map((r) => [owedKey(r.subscriber, r.warning_id, r.event_type), r]),
      );
      const result: Outcome = {
        seed,
        owed: owed.size,
        delivered: 0,
        dead: 0,
        lost: [],
        unexpected: [],
        wronglyDead: [],
        sends: 0,
        duplicates: 0,
        splitIds: [],
        unreceived: [],
        events: {},
        deadReasons: {},
        crashes: workers
          .filter((w) => w.crashed())
          .map((w) => `${w.name} exited (${w.child.exitCode}):\n${w.logTail()}`),
      };
      for (const [key, o] of owed) {
        const row = byKey.get(key);
        const excused = mayBeDead(o);
        if (row?.status === 'sent') {
          if (excused) result.wronglyDead.push(`${key} was sent though the fault forbids it`);
          else result.delivered += 1;
        } else if (row?.status === 'dead') {
          const reason = (row.last_error ?? '').slice(0, 60) || '(no reason)';
          result.deadReasons[reason] = (result.deadReasons[reason] ?? 0) + 1;
          if (excused && row.last_error) result.dead += 1;
          else result.wronglyDead.push(`${key}: ${row.last_error ?? 'no reason'}`);
        } else if (!(excused && row === undefined)) {
          result.lost.push(`${key} (${row?.status ?? 'no row'})`);
        } else {
          result.dead += 1;
        }
      }
      for (const key of byKey.keys()) if (!owed.has(key)) result.unexpected.push(key);

      // Sent in the ledger, taken by its receiver: the message id of each sent notification,
      // under its subscriber's address, among what the SMTP sink or the receiver accepted.
      const received = new Set<string>();
      for (const mail of h.smtp.messages) {
        for (const to of mail.envelope.to) received.add(`${to} ${mail.messageId ?? '?'}`);
      }
      for (const request of acceptedWebhooks()) {
        received.add(`${request.path} ${String(request.headers['webhook-id'])}`);
      }
      for (const row of rows) {
        if (row.status !== 'sent') continue;
        // The sink keeps a Message-ID without its angle brackets.
        const id =
          row.channel === 'email'
            ? messageIdFor(row.message_id).replace(/^<|>$/g, '')
            : row.message_id;
        if (!received.has(`${row.subscriber} ${id}`)) {
          result.unreceived.push(`${owedKey(row.subscriber, row.warning_id, row.event_type)}`);
        }
      }

      // What the receivers accepted, keyed by content (who, which warning, which event), each
      // with the ids it came under: two ids for one content is a notification sent twice over.
      const idsByContent = new Map<string, Map<string, number>>();
      const count = (content: string, id: string) => {
        const ids = idsByContent.get(content) ?? new Map<string, number>();
        ids.set(id, (ids.get(id) ?? 0) + 1);
        idsByContent.set(content, ids);
      };
      for (const mail of h.smtp.messages) {
        // A grouped email's content is several warnings; its Message-ID is what it is once.
        const content =
          emailGroup === 'none'
            ? `${mail.subject ?? ''} ${warningIdInText(mail.parsed.text)}`
            : (mail.messageId ?? '?');
        count(`${mail.envelope.to.join(',')} ${content}`, mail.messageId ?? '?');
      }
      for (const request of acceptedWebhooks()) {
        const body = request.json as { type?: string; data?: { warning?: { id?: string } } };
        const id = request.headers['webhook-id'];
        count(
          `${request.path} ${body?.type ?? '?'} ${body?.data?.warning?.id ?? '?'}`,
          typeof id === 'string' ? id : '?',
        );
      }
      for (const [content, ids] of idsByContent) {
        if (ids.size > 1) result.splitIds.push(`${content}: ${[...ids.keys()].join(', ')}`);
        for (const n of ids.values()) {
          result.sends += n;
          result.duplicates += n - 1;
        }
      }

      const events = await queryRows<{ type: string; n: number }>(
        db,
        sql`SELECT type, count(*)::int AS n FROM events GROUP BY type`,
      );
      for (const e of events) result.events[e.type] = e.n;
      return result;
    },
    scriptHook(path, responses) {
      scripted.set(path, (scripted.get(path) ?? 0) + responses.length);
      h.hooks.script(path, responses);
    },
    redis() {
      const connection = new Redis(h.env.REDIS_URL!, { maxRetriesPerRequest: 3 });
      connections.push(connection);
      return connection;
    },
    async close() {
      await Promise.all(workers.map((w) => w.stop(5_000)));
      for (const c of connections) c.disconnect();
      await h.close();
    },
  };
  return run;
}

/** One line per fault for the report (docs/RELIABILITY.md is filled from these). */
export function report(fault: string, outcome: Outcome, extra: Record<string, unknown> = {}): void {
  const line = {
    fault,
    seed: outcome.seed,
    owed: outcome.owed,
    delivered: outcome.delivered,
    dead: outcome.dead,
    duplicated: outcome.duplicates,
    lost: outcome.lost.length,
    unexpected: outcome.unexpected.length,
    splitIds: outcome.splitIds.length,
    unreceived: outcome.unreceived.length,
    crashes: outcome.crashes.length,
    sends: outcome.sends,
    events: outcome.events,
    ...(Object.keys(outcome.deadReasons).length ? { deadReasons: outcome.deadReasons } : {}),
    ...extra,
  };
  process.stdout.write(`FAULT-REPORT ${JSON.stringify(line)}\n`);
}
