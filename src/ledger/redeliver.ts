import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'drizzle-orm';
import { queryRows, type Db } from '../db/client.js';
import { inactiveReason } from '../domain/subscriber-state.js';
import { deliverQueue, enqueueMessage, type DeliverQueues } from './dispatch.js';
import { IN_COLLECTING_MESSAGE } from './lookups.js';
import type { Channel } from './message.js';
import { attemptUnderWay } from './settle.js';
import { deliverJobId } from '../runtime/queues.js';
import {
  getDeliveries,
  isDeliveryId,
  storedStatus,
  type DeliveryListing,
  type DeliveryStatus,
} from './list.js';

/**
 * Replaying messages (`qwn redeliver`). A message is set back to pending and gets a deliver job
 * under its own id, so the receiver sees the same webhook-id / Message-ID as the first time,
 * with the same notifications in it. A notification's id names the message that carries it.
 *
 * Attempts start again from 0: a redelivery is an admin asking for the message once more, and
 * it deserves the whole retry schedule — a dead message kept at its old count would die again
 * at the first failure. When it was last delivered (`sent_at`) and the last error stay as they
 * were until the new attempt replaces them.
 */

/**
 * By id: those messages, whatever they went through. By time: the messages since then that
 * failed (retrying or dead), or those of one `status`; sent ones only with `includeSent`.
 */
export type RedeliverSelection =
  | { readonly ids: readonly string[] }
  | { readonly since: Date; readonly status?: DeliveryStatus; readonly includeSent?: boolean };

/** What `--since` resends unless asked otherwise: what did not reach its receiver. */
export const FAILED_STATUSES: readonly DeliveryStatus[] = ['retrying', 'dead'];

export type SkipReason = 'subscriber-inactive' | 'in-flight' | 'held';

export interface RedeliverResult {
  /** Rows set back to pending, each with a deliver job for its next attempt (dry run: would be). */
  requeued: { id: string; previousStatus: DeliveryStatus; previousAttempts: number }[];
  skipped: { id: string; reason: SkipReason; detail: string }[];
  /** Ids asked for that name no row. */
  unknown: string[];
}

interface Candidate {
  id: string;
  /** The id asked for: the message's, or that of a notification it carries. */
  asked: string | null;
  status: DeliveryStatus;
  attempts: number;
  active: boolean;
  unsubscribed: boolean;
  disabled_reason: string | null;
  in_flight: boolean;
}

/**
 * Whether message `d` has an attempt under way: claimed by a sender, or a first attempt that
 * its planned job owns and may be making right now (src/ledger/take.ts).
 */
const inFlight = (now: Date) => sql`(coalesce(d.claimed_until >= ${now}::timestamptz, false)
  OR (d.status = 'pending' AND d.attempts = 0 AND d.first_job_id IS NOT NULL))`;

function selectCandidates(db: Db, now: Date, selection: RedeliverSelection): Promise<Candidate[]> {
  if ('ids' in selection) {
    const ids = sql.param(selection.ids.filter(isDeliveryId).map((id) => id.toLowerCase()));
    return queryRows<Candidate>(
      db,
      sql`(SELECT DISTINCT ON (d.id) d.id, a.id::text AS asked,
            CASE WHEN d.status = 'open' THEN 'held' ELSE d.status END AS status, d.attempts,
            s.active, s.unsubscribed_at IS NOT NULL AS unsubscribed, s.disabled_reason,
            ${inFlight(now)} AS in_flight
          FROM unnest(${ids}::uuid[]) AS a(id)
          JOIN messages d ON d.id = a.id
            OR d.id = (SELECT n.message_id FROM deliveries n WHERE n.id = a.id)
          JOIN subscribers s ON s.id = d.subscriber_id
          ORDER BY d.id, d.created_at)
          UNION ALL
          SELECT DISTINCT d.message_id, a.id::text, ${COLLECTING_CANDIDATE}
          FROM unnest(${ids}::uuid[]) AS a(id)
          JOIN deliveries d ON d.id = a.id OR (d.message_id = a.id AND d.message_id <> d.id)
          JOIN subscribers s ON s.id = d.subscriber_id
          WHERE ${IN_COLLECTING_MESSAGE}`,
    );
  }
  const since = selection.since.toISOString();
  const statuses: readonly DeliveryStatus[] | null = selection.status
    ? [selection.status]
    : selection.includeSent
      ? null
      : FAILED_STATUSES;
  const where = statuses
    ? sql`d.created_at >= ${since}
          AND d.status = ANY(${sql.param(statuses.map(storedStatus))}::text[])`
    : sql`d.created_at >= ${since}`;
  const collectingWhere =
    statuses === null || statuses.includes('held') ? sql`d.created_at >= ${since}` : sql`false`;
  return queryRows<Candidate>(
    db,
    sql`SELECT * FROM (
          SELECT d.id, NULL AS asked,
            CASE WHEN d.status = 'open' THEN 'held' ELSE d.status END AS status, d.attempts,
            s.active, s.unsubscribed_at IS NOT NULL AS unsubscribed, s.disabled_reason,
            ${inFlight(now)} AS in_flight, d.created_at
          FROM messages d JOIN subscribers s ON s.id = d.subscriber_id
          WHERE ${where}
          UNION ALL
          (SELECT DISTINCT ON (d.message_id) d.message_id, NULL, ${COLLECTING_CANDIDATE},
             d.created_at
           FROM deliveries d JOIN subscribers s ON s.id = d.subscriber_id
           WHERE ${collectingWhere} AND ${IN_COLLECTING_MESSAGE}
           ORDER BY d.message_id, d.created_at)) c
        ORDER BY c.created_at, c.id`,
  );
}

/**
 * A cycle's message still collecting without its row (src/ledger/release.ts) as a candidate,
 * after its id and the id asked for, through a notification `d`: held, never tried.
 */
const COLLECTING_CANDIDATE = sql`'held' AS status, 0 AS attempts, s.active,
  s.unsubscribed_at IS NOT NULL AS unsubscribed, s.disabled_reason, false AS in_flight`;

/**
 * Sets the selected rows back to pending and enqueues their deliver jobs. Rows of a paused or
 * disabled subscriber and rows with an attempt under way are skipped. Running it again while
 * the rows are still pending sends nothing twice: the job id is the row's and the attempt's,
 * and a row is only ever claimed by one sender.
 */
export async function redeliver(
  deps: { db: Db; queues: DeliverQueues; now: () => Date },
  selection: RedeliverSelection,
  options: { dryRun?: boolean } = {},
): Promise<RedeliverResult> {
  const now = deps.now();
  const candidates = await selectCandidates(deps.db, now, selection);
  const found = new Set(candidates.flatMap((c) => [c.id, c.asked ?? c.id]));
  const unknown =
    'ids' in selection ? selection.ids.filter((id) => !found.has(id.toLowerCase())) : [];

  const skipped: RedeliverResult['skipped'] = [];
  const eligible: string[] = [];
  for (const c of candidates) {
    if (!c.active || c.unsubscribed) {
      // An unsubscribe is final until the person undoes it (docs/design.md, invariant 11).
      skipped.push({
        id: c.id,
        reason: 'subscriber-inactive',
        detail: inactiveReason(c),
      });
    } else if (c.status === 'held') {
      // Still collecting: sending it now would break its quiet hours or hourly limit, and it
      // goes out by itself when its hold ends (invariant 9).
      skipped.push({ id: c.id, reason: 'held', detail: 'the message is held and not sent yet' });
    } else if (c.in_flight) {
      skipped.push({ id: c.id, reason: 'in-flight', detail: 'an attempt is under way' });
    } else {
      eligible.push(c.id);
    }
  }

  const order = new Map(candidates.map((c, i) => [c.id, i]));
  const byOrder = (a: { id: string }, b: { id: string }) =>
    (order.get(a.id) ?? 0) - (order.get(b.id) ?? 0);
  if (options.dryRun) {
    const byId = new Map(candidates.map((c) => [c.id, c]));
    return {
      requeued: eligible.map((id) => ({
        id,
        previousStatus: byId.get(id)!.status,
        previousAttempts: byId.get(id)!.attempts,
      })),
      skipped: skipped.sort(byOrder),
      unknown,
    };
  }

  // The same conditions again under the row lock: a sender may have claimed a row since.
  const reset =
    eligible.length === 0
      ? []
      : await queryRows<{
          id: string;
          channel: Channel;
          previous_status: DeliveryStatus;
          previous_attempts: number;
        }>(
          deps.db,
          sql`WITH target AS (
                SELECT d.id, d.status, d.attempts
                FROM messages d JOIN subscribers s ON s.id = d.subscriber_id
                WHERE d.id = ANY(${sql.param(eligible)}::uuid[])
                  AND s.active AND s.unsubscribed_at IS NULL AND d.status <> 'open'
                  AND NOT ${inFlight(now)}
                FOR UPDATE OF d)
              UPDATE messages d SET status = 'pending', attempts = 0, next_attempt_at = ${now},
                claimed_until = NULL, first_job_id = NULL, updated_at = ${now}
              FROM target t
              WHERE d.id = t.id
              RETURNING d.id, d.channel,
                CASE WHEN t.status = 'open' THEN 'held' ELSE t.status END AS previous_status,
                t.attempts AS previous_attempts`,
        );
  const resetIds = new Set(reset.map((r) => r.id));
  for (const id of eligible) {
    if (!resetIds.has(id)) {
      skipped.push({ id, reason: 'in-flight', detail: 'an attempt is under way' });
    }
  }

  for (const row of reset) {
    if (row.previous_attempts > 0 && row.previous_status !== 'sent') {
      // The old series' delayed retry would only find the row not due; drop it to keep Redis tidy.
      await removeDelayedJob(deps.queues, row.channel, deliverJobId(row.id, row.previous_attempts));
    }
    await enqueueMessage(deps.queues, row, 0);
  }

  return {
    requeued: reset
      .map((r) => ({
        id: r.id,
        previousStatus: r.previous_status,
        previousAttempts: r.previous_attempts,
      }))
      .sort(byOrder),
    skipped: skipped.sort(byOrder),
    unknown,
  };
}

async function removeDelayedJob(
  queues: DeliverQueues,
  channel: Channel,
  jobId: string,
): Promise<void> {
  const job = await deliverQueue(queues, channel).getJob(jobId);
  if (!job || (await job.getState()) !== 'delayed') return;
  await job.remove().catch(() => undefined);
}

/**
 * Waits until every message has had its next attempt (sent, retrying or dead), by whichever
 * worker took it, and returns their notifications. A message whose claim ran out without an
 * outcome (a crashed sender) counts as done here: the sweeper owns it.
 */
export async function waitForAttempts(
  db: Db,
  ids: readonly string[],
  o: { timeoutMs: number; pollMs?: number },
): Promise<{ rows: DeliveryListing[]; timedOut: boolean }> {
  const deadline = Date.now() + o.timeoutMs;
  let timedOut = false;
  if (ids.length > 0) {
    for (;;) {
      const [open] = await queryRows<{ n: number }>(
        db,
        sql`SELECT count(*)::int AS n FROM messages
            WHERE id = ANY(${sql.param([...ids])}::uuid[]) AND ${attemptUnderWay(new Date())}`,
      );
      if ((open?.n ?? 0) === 0) break;
      if (Date.now() >= deadline) {
        timedOut = true;
        break;
      }
      await sleep(o.pollMs ?? 100);
    }
  }
  return { rows: await getDeliveries(db, ids), timedOut };
}
