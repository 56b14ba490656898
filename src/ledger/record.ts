import { createHash } from 'node:crypto';
import { sql, type SQL } from 'drizzle-orm';
import { queryRows } from '../db/client.js';
import {
  plainArray,
  PreparedStatement,
  type ArrayText,
  type Placeholders,
} from '../db/prepared.js';
import type { EventType } from '../domain/detect.js';
import type { SubscriptionFilter } from '../domain/filters.js';
import {
  CYCLE_WAIT_LIMIT_MS,
  isUrgent,
  placeNotification,
  type DeliveryPrefs,
  type GroupMode,
  type Hold,
  type OpenMessage,
} from '../domain/schedule.js';
import { parseLevel, type Level, type Warning } from '../domain/warning.js';
import { carriedBy, IN_COLLECTING_MESSAGE } from './lookups.js';
import type { PipelineContext } from '../runtime/context.js';
import { scheduleCycleReleases } from './release.js';
import { enqueueFirstAttempts, firstAttemptJob, plannedBatches } from './dispatch.js';
import { CLAIM_SECONDS } from './take.js';
import { CHANNELS, kindOf, subscriberChannelSql } from '../channels/kinds.js';
import type { Channel, CreatedMessage, CycleRelease } from './message.js';
import type { Tx } from '../db/client.js';
import { knownFirstAttempt, type KnownContent } from './known-first-attempt.js';
import { ledgerId, ledgerIds } from './ids.js';

/**
 * The notification ledger's writes that both checks share: one row per (subscriber, warning
 * id, event type) that a subscriber's filters let through (docs/design.md, invariant 2), each carried by
 * exactly one message (invariant 8). A subscriber who neither groups, nor has quiet hours, nor
 * an hourly limit gets a message per notification under the notification's own id, written in
 * the same statement and planned into a first-attempt batch; one who groups by cycle and nothing
 * else joins the cycle's message in that statement too; the others go through the scheduler
 * (src/domain/schedule.ts).
 */

/** The channel of subscriber `u`: the column of its one address. */
const SUBSCRIBER_CHANNEL = subscriberChannelSql('u');

/** The default grouping of subscriber `u`'s channel (`ChannelKind.defaultGroup`). */
const DEFAULT_GROUP = `CASE ${CHANNELS.map(
  (c) => `WHEN u.${kindOf(c).addressColumn} IS NOT NULL THEN '${kindOf(c).defaultGroup}'`,
).join(' ')} END`;

/** Whether subscriber `u`'s channel always goes through the scheduler (a robot's). */
const ALWAYS_SCHEDULED = `(${
  CHANNELS.filter((c) => kindOf(c).alwaysScheduled)
    .map((c) => `u.${kindOf(c).addressColumn} IS NOT NULL`)
    .join(' OR ') || 'false'
})`;

/**
 * What the subscription queries of both checks select of the subscriber: its channel and
 * whether its notifications need the scheduler. A robot's always do, whatever its grouping:
 * while the robot's rate limit holds a message back, what follows must be able to join it.
 */
export const SUBSCRIBER_DELIVERY_COLUMNS = sql.raw(`
  ${SUBSCRIBER_CHANNEL} AS channel,
  (coalesce(u.group_mode, ${DEFAULT_GROUP}) <> 'none'
   OR u.quiet_from IS NOT NULL OR u.max_per_hour IS NOT NULL OR ${ALWAYS_SCHEDULED}) AS scheduled,
  (coalesce(u.group_mode, ${DEFAULT_GROUP}) = 'cycle'
   AND u.quiet_from IS NULL AND u.max_per_hour IS NULL AND NOT ${ALWAYS_SCHEDULED}) AS cycle_only`);

/** Who may be told anything: active, and not unsubscribed (docs/design.md, invariant 11). */
export const SUBSCRIBER_RECEIVES = sql.raw(`u.active AND u.unsubscribed_at IS NULL`);

export interface SubscriptionRow {
  subscriber_id: string;
  channel: Channel;
  /** Groups, has quiet hours or an hourly limit: see `SUBSCRIBER_DELIVERY_COLUMNS`. */
  scheduled: boolean;
  /** Groups by cycle and nothing else (the email default): see `cycleMessageCtes`. */
  cycle_only: boolean;
  min_level: string | null;
  types: string[] | null;
  events: EventType[] | null;
}

export function toFilter(row: SubscriptionRow): SubscriptionFilter {
  return {
    minLevel: parseLevel(row.min_level) ?? null,
    types: row.types,
    events: row.events,
  };
}

/** A notification a check owes, before it is inserted. */
export interface NewNotification {
  subscriberId: string;
  eventId: number;
  cycleId: string;
  placeId: string;
  warningId: string;
  eventType: EventType;
  /** The warning's occurrence (src/domain/detect.ts): part of the notification's key. */
  occurrence: number;
  channel: Channel;
  scheduled: boolean;
  cycleOnly: boolean;
  level: Level;
  /** Earlier warning ids of the chain (the event's `supersedes`). */
  supersedes: readonly string[];
  /**
   * Every earlier id of the warning's story known where it was detected (`DetectedEvent.chain`):
   * who was told any of them was told this story (src/ledger/told.ts). Not stored.
   */
  chain: readonly string[];
  /**
   * What its check read of its subscriber and wrote of its event, when its first attempt may go
   * out from the check's own process (`RecordInput.leased`): that attempt needs no take.
   */
  known?: KnownContent;
}

/** The level a notification is told at: v1 alerts may carry only a colour. */
export function notifiedLevel(warning: Warning): Level {
  if (warning.level !== 'unknown') return warning.level;
  return parseLevel(warning.color) ?? 'unknown';
}

/** Bounded statements: one national storm can owe thousands of rows to one place. */
const INSERT_CHUNK = 5000;

export interface InsertedNotifications {
  /** Notifications written (those that existed already are skipped). */
  count: number;
  messages: CreatedMessage[];
  releases: CycleRelease[];
}

export const NOTHING_INSERTED = (): InsertedNotifications => ({
  count: 0,
  messages: [],
  releases: [],
});

/**
 * After the check's commit, what its notifications need of Redis: the jobs of their messages'
 * first attempts, and the release job of each cycle they joined. A crash before this leaves rows
 * without jobs, which the sweeper finds.
 */
export async function enqueueInserted(
  ctx: PipelineContext,
  inserted: InsertedNotifications,
  now: Date,
): Promise<void> {
  // Only a process that sends first attempts itself writes leased messages; were one to reach
  // a process without a sender, its batch jobs carry it as any other.
  const sender = ctx.firstAttempts;
  const here = sender ? inserted.messages.filter((m) => m.leased) : [];
  await enqueueFirstAttempts(
    ctx.queues,
    sender ? inserted.messages.filter((m) => !m.leased) : inserted.messages,
    now,
  );
  if (sender && here.length > 0) sender.send(plannedBatches(here));
  await scheduleCycleReleases(ctx, inserted.releases);
}

/**
 * The channels whose direct messages a check writes leased to its own process, which sends
 * their first attempts itself (`PipelineContext.firstAttempts`).
 */
export function leasedChannels(ctx: PipelineContext): readonly Channel[] {
  return ctx.firstAttempts?.channels ?? [];
}

/**
 * Inserts a check's notifications and the messages that carry them, skipping notifications
 * that exist (docs/design.md, invariant 2). `key` names the check (cycle and place or point), which runs
 * once per cycle, so the first-attempt job ids it derives never repeat.
 */
export async function insertNotifications(
  tx: Tx,
  rows: readonly NewNotification[],
  input: RecordInput,
): Promise<InsertedNotifications> {
  const result = NOTHING_INSERTED();
  const direct = rows.filter((r) => !r.scheduled);
  const cycleOnly = rows.filter((r) => r.cycleOnly);
  let scheduled = rows.filter((r) => r.scheduled && !r.cycleOnly);
  // The cycle messages' notifications go with the first chunk of the others: a storm's check
  // has both, and one statement fewer.
  const chunks = Math.max(Math.ceil(direct.length / INSERT_CHUNK), cycleOnly.length > 0 ? 1 : 0);
  for (let chunk = 0; chunk < chunks; chunk += 1) {
    const i = chunk * INSERT_CHUNK;
    const part = await insertUnscheduled(
      tx,
      { direct: direct.slice(i, i + INSERT_CHUNK), cycleOnly: i === 0 ? cycleOnly : [] },
      input,
      i,
    );
    result.count += part.count;
    result.messages.push(...part.messages);
    result.releases.push(...part.releases);
    // Notifications of a cycle that stopped collecting: placed as any other.
    scheduled = [...scheduled, ...part.late];
  }
  if (scheduled.length > 0) {
    const part = await insertScheduled(tx, scheduled, input);
    result.count += part.count;
    result.messages.push(...part.messages);
  }
  return result;
}

export interface RecordInput {
  /** The check (cycle and place or point), which runs once per cycle: its job ids never repeat. */
  key: string;
  /** The check's time, taken before its transaction began: a known message's `readAt`. */
  now: Date;
  /**
   * The channels whose direct messages go out from the writer's own process: written claimed
   * by it for `CLAIM_SECONDS` (the lease), so that neither the sweeper nor another job takes
   * them while it sends. A process that dies leaves them to the sweeper once the lease is over.
   */
  leased?: readonly Channel[];
}

/**
 * A check's notifications as the column arrays that `unnest` reads: one parameter per column,
 * not one per row and column, which a storm's checks spent most of their time building and
 * Postgres parsing.
 */
interface NotificationColumns {
  subscriberIds: ArrayText;
  eventIds: ArrayText;
  cycleIds: ArrayText;
  placeIds: string[];
  warningIds: string[];
  eventTypes: ArrayText;
  occurrences: ArrayText;
  channels: ArrayText;
}

function notificationColumns(rows: readonly NewNotification[]): NotificationColumns {
  return {
    subscriberIds: plainArray(rows.map((r) => r.subscriberId)),
    eventIds: plainArray(rows.map((r) => r.eventId)),
    cycleIds: plainArray(rows.map((r) => r.cycleId)),
    placeIds: rows.map((r) => r.placeId),
    warningIds: rows.map((r) => r.warningId),
    eventTypes: plainArray(rows.map((r) => r.eventType)),
    occurrences: plainArray(rows.map((r) => r.occurrence)),
    channels: plainArray(rows.map((r) => r.channel)),
  };
}

/** What `directCtes` writes: the notifications, their ids, and how their messages start. */
interface DirectValues extends NotificationColumns {
  now: Date;
  /** The notifications' ids, which their messages share. */
  ids: ArrayText;
  /** What the check's first-attempt job ids start with (`firstAttemptJob`). */
  jobPrefix: string;
  /** The channels whose messages are written leased to the writer (`RecordInput.leased`). */
  leased: Channel[];
}

/**
 * A message per notification, under the notification's id, written by the common table
 * expressions `direct` and `direct_messages`. Rows of one channel share a first-attempt job,
 * `firstAttemptBatch` at a time (src/channels/kinds.ts), which owns their first attempts
 * (`first_job_id`, src/ledger/take.ts). The ids are drawn by the writer, so that a message sent
 * from its process is known by its id before the statement returns (`knownFirstAttempt`).
 */
function directCtes(p: Placeholders<DirectValues>): SQL {
  return sql`direct AS (
          INSERT INTO deliveries (id, message_id, subscriber_id, event_id, cycle_id, place_id,
            warning_id, event_type, occurrence, channel, created_at)
          SELECT v.id, v.id, v.subscriber_id, v.event_id, v.cycle_id, v.place_id, v.warning_id,
            v.event_type, v.occurrence, v.channel, ${p.now}::timestamptz
          FROM unnest(${p.ids}::uuid[], ${p.subscriberIds}::uuid[], ${p.eventIds}::bigint[],
            ${p.cycleIds}::uuid[], ${p.placeIds}::text[], ${p.warningIds}::text[],
            ${p.eventTypes}::text[], ${p.occurrences}::int[], ${p.channels}::text[])
            AS v(id, subscriber_id, event_id, cycle_id, place_id, warning_id, event_type,
                 occurrence, channel)
          ON CONFLICT DO NOTHING
          RETURNING id, subscriber_id, channel),
        direct_batched AS (
          SELECT n.*, ${firstAttemptJob(p.jobPrefix, sql`n.channel`, sql`n.id`)} AS first_job_id
          FROM direct n),
        -- A check runs once per cycle, so its job ids are new; a run repeated after its commit
        -- (a stalled job) names a job that has run: the sweeper hands those messages back.
        direct_messages AS (
          INSERT INTO messages (id, subscriber_id, channel, status, next_attempt_at, first_job_id,
            claimed_until, created_at, updated_at)
          SELECT id, subscriber_id, channel, 'pending', ${p.now}::timestamptz, first_job_id,
            CASE WHEN channel = ANY(${p.leased}::text[])
              THEN ${p.now}::timestamptz + make_interval(secs => ${CLAIM_SECONDS}) END,
            ${p.now}::timestamptz, ${p.now}::timestamptz
          FROM direct_batched)`;
}

function directValues(
  chunk: readonly NewNotification[],
  ids: string[],
  input: RecordInput,
  offset: number,
): DirectValues {
  return {
    ...notificationColumns(chunk),
    now: input.now,
    ids: plainArray(ids),
    jobPrefix: `${input.key}_${offset}_`,
    leased: [...(input.leased ?? [])],
  };
}

/**
 * The messages `directCtes` wrote, by first-attempt job: each job's id once, not once per
 * message (a storm's checks returned their messages as an object each, most of the result's
 * bytes the job's id repeated).
 */
const DIRECT_RESULT = sql`(SELECT json_agg(json_build_object(
    'job', first_job_id, 'channel', channel, 'ids', ids)) FROM (
      SELECT first_job_id, channel, array_agg(id) AS ids FROM direct_batched
      GROUP BY first_job_id, channel) b) AS direct`;

/** What `cycleJoinCtes` writes: the notifications of cycle-only subscribers. */
interface CycleJoinValues {
  now: Date;
  /** The cycles they join, in id order (the order their rows are locked in). */
  cycles: string[];
  joiningIds: ArrayText;
  joiningSubscriberIds: ArrayText;
  joiningEventIds: ArrayText;
  joiningCycleIds: ArrayText;
  joiningPlaceIds: string[];
  joiningWarningIds: string[];
  joiningEventTypes: ArrayText;
  joiningOccurrences: ArrayText;
  joiningChannels: ArrayText;
  /** Each notification's message: its subscriber's of its cycle (`cycleMessageId`). */
  joiningMessageIds: ArrayText;
}

const JOINED_RESULT = sql`(SELECT array_agg(id::text) FROM collecting) AS collecting,
  (SELECT count(*)::int FROM joined) AS joined`;

/** The statements of `insertUnscheduled`, by what a check owes: each shape's text built once. */
const INSERT_DIRECT = new PreparedStatement<DirectValues>(
  (p) => sql`WITH ${directCtes(p)} SELECT ${DIRECT_RESULT}`,
);
const INSERT_JOINED = new PreparedStatement<CycleJoinValues>(
  (p) => sql`WITH ${cycleJoinCtes(p)} SELECT NULL::json AS direct, ${JOINED_RESULT}`,
);
const INSERT_DIRECT_AND_JOINED = new PreparedStatement<DirectValues & CycleJoinValues>(
  (p) => sql`WITH ${directCtes(p)}, ${cycleJoinCtes(p)} SELECT ${DIRECT_RESULT}, ${JOINED_RESULT}`,
);

/** A first-attempt job of `DIRECT_RESULT` and the messages it owns. */
interface CreatedBatch {
  job: string;
  channel: Channel;
  ids: string[];
}

/**
 * The notifications that need no scheduler: `direct` ones, each with a message of its own, and
 * those of subscribers who group by cycle and nothing else (`cycleOnly`, see `cycleJoinCtes`),
 * in one statement. Returns the cycle notifications whose cycle had stopped collecting as
 * `late`.
 */
async function insertUnscheduled(
  tx: Tx,
  parts: { direct: readonly NewNotification[]; cycleOnly: readonly NewNotification[] },
  input: RecordInput,
  offset: number,
): Promise<InsertedNotifications & { late: NewNotification[] }> {
  const ids = ledgerIds(input.now, parts.direct.length);
  const cycleOnly = parts.cycleOnly;
  const joining = cycleOnly.length > 0 ? cycleJoinValues(cycleOnly, input.now) : null;
  const direct = parts.direct.length > 0 ? directValues(parts.direct, ids, input, offset) : null;
  type Result = { direct: CreatedBatch[] | null; collecting?: string[] | null; joined?: number };
  const [row] =
    direct && joining
      ? await INSERT_DIRECT_AND_JOINED.run<Result>(tx, { ...direct, ...joining })
      : direct
        ? await INSERT_DIRECT.run<Result>(tx, direct)
        : joining
          ? await INSERT_JOINED.run<Result>(tx, joining)
          : [];
  const written = new Map<string, NewNotification>(ids.map((id, i) => [id, parts.direct[i]!]));
  const messages: CreatedMessage[] = [];
  for (const batch of row?.direct ?? []) {
    const leased = input.leased?.includes(batch.channel) ?? false;
    for (const id of batch.ids) {
      const notification = written.get(id)!;
      messages.push({
        id,
        channel: batch.channel,
        firstJobId: batch.job,
        dueAt: input.now,
        leased,
        ...(leased && notification.known
          ? { known: knownFirstAttempt(id, notification, notification.known, input.now.getTime()) }
          : {}),
      });
    }
  }
  const result = {
    count: messages.length,
    late: [] as NewNotification[],
    messages,
    releases: [] as CycleRelease[],
  };
  if (cycleOnly.length === 0) return result;
  const collecting = new Set(row?.collecting ?? []);
  result.count += row?.joined ?? 0;
  result.late = cycleOnly.filter((r) => !collecting.has(r.cycleId));
  if ((row?.joined ?? 0) > 0) {
    const dueAt = new Date(input.now.getTime() + CYCLE_WAIT_LIMIT_MS);
    result.releases = [...collecting].map((cycleId) => ({ cycleId, dueAt }));
  }
  return result;
}

/**
 * The id of a subscriber's message for one cycle: the same in every check of the cycle, so that
 * checks name it without reading or writing anything. Name-based (RFC 9562 version 8 layout
 * over SHA-256), distinct from the time-ordered ids of notifications (`ledgerIds`).
 */
export function cycleMessageId(subscriberId: string, cycleId: string): string {
  const hex = createHash('sha256')
    .update(`qwn-cycle-message/${subscriberId}/${cycleId}`)
    .digest('hex');
  const variant = ((parseInt(hex[16]!, 16) & 0x3) | 0x8).toString(16);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-8${hex.slice(13, 16)}-${variant}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

/**
 * Notifications of subscribers who group by cycle and nothing else (the email default): each
 * joins the subscriber's message of the cycle, `cycleMessageId`, which has no row while it
 * collects: its row is written by the cycle's release, due (src/ledger/release.ts).
 *
 * What a check shares with the other checks and the release is the cycle's row, locked `FOR KEY
 * SHARE` while the cycle still collects (`released_at` null). Sixteen checks of a storm reach the
 * same national desks: a message row written by the first would make the others wait on its key
 * until that check commits. The counters' updates of the cycle row (a `NO KEY UPDATE`) do not
 * wait for the checks either; the release's `FOR UPDATE` waits for every check still adding,
 * then stops the collecting, and a check that locks the row after that reads it released and
 * leaves its notifications `late`, for the scheduler
 * (test/pipeline/cycle-message-race.int.test.ts).
 */
function cycleJoinCtes(p: Placeholders<CycleJoinValues>): SQL {
  return sql`collecting AS (
          SELECT id FROM poll_cycles
          WHERE id = ANY(${p.cycles}::uuid[]) AND released_at IS NULL
          ORDER BY id
          FOR KEY SHARE),
        joined AS (
          INSERT INTO deliveries (id, subscriber_id, event_id, cycle_id, place_id, warning_id,
            event_type, occurrence, channel, message_id, created_at)
          SELECT *, ${p.now}::timestamptz FROM unnest(${p.joiningIds}::uuid[],
            ${p.joiningSubscriberIds}::uuid[],
            ${p.joiningEventIds}::bigint[], ${p.joiningCycleIds}::uuid[],
            ${p.joiningPlaceIds}::text[], ${p.joiningWarningIds}::text[],
            ${p.joiningEventTypes}::text[], ${p.joiningOccurrences}::int[],
            ${p.joiningChannels}::text[], ${p.joiningMessageIds}::uuid[])
            AS v(id, subscriber_id, event_id, cycle_id, place_id, warning_id, event_type,
                 occurrence, channel, message_id)
          WHERE v.cycle_id IN (SELECT id FROM collecting)
          ON CONFLICT DO NOTHING
          RETURNING message_id)`;
}

function cycleJoinValues(rows: readonly NewNotification[], now: Date): CycleJoinValues {
  const columns = notificationColumns(rows);
  return {
    now,
    cycles: [...new Set(rows.map((r) => r.cycleId))].sort(),
    joiningIds: plainArray(ledgerIds(now, rows.length)),
    joiningSubscriberIds: columns.subscriberIds,
    joiningEventIds: columns.eventIds,
    joiningCycleIds: columns.cycleIds,
    joiningPlaceIds: columns.placeIds,
    joiningWarningIds: columns.warningIds,
    joiningEventTypes: columns.eventTypes,
    joiningOccurrences: columns.occurrences,
    joiningChannels: columns.channels,
    joiningMessageIds: plainArray(rows.map((r) => cycleMessageId(r.subscriberId, r.cycleId))),
  };
}

interface SubscriberPrefsRow {
  id: string;
  channel: Channel;
  group_mode: 'none' | 'cycle' | 'window' | null;
  group_window_seconds: number | null;
  timezone: string;
  quiet_from: string | null;
  quiet_to: string | null;
  quiet_bypass_level: string | null;
  max_per_hour: number | null;
}

function prefsOf(row: SubscriberPrefsRow): DeliveryPrefs {
  const group: GroupMode =
    row.group_mode === 'none' || row.group_mode === 'cycle'
      ? { kind: row.group_mode }
      : row.group_mode === 'window'
        ? { kind: 'window', seconds: row.group_window_seconds ?? 60 }
        : // Docs/messages.md: an email and a chat robot collect their cycle, a webhook does not.
          { kind: kindOf(row.channel).defaultGroup };
  return {
    group,
    timezone: row.timezone,
    quietHours:
      row.quiet_from && row.quiet_to
        ? {
            from: row.quiet_from,
            to: row.quiet_to,
            bypassLevel: parseLevel(row.quiet_bypass_level) ?? null,
          }
        : null,
    maxPerHour: row.max_per_hour,
  };
}

/** A message the scheduler created for this check, before it is written. */
interface PlannedMessage {
  id: string;
  subscriberId: string;
  channel: Channel;
  hold: Hold | null;
  cycleId: string | null;
  dueAt: Date;
}

/** Namespaced so that no other advisory lock of qwn (migrate, seed, alerts) collides with it. */
export const MESSAGE_LOCK = 'qwn-messages/';

/**
 * Notifications of subscribers who group, keep quiet hours or an hourly limit: each is placed
 * by the scheduler into a message that still collects, or a new one. The subscribers are locked
 * (advisory, in id order) so that two checks never both open a message for one of them, and
 * the open messages row-locked, so a sender taking one waits for this transaction and then sees
 * every notification that joined it.
 */
async function insertScheduled(
  tx: Tx,
  rows: readonly NewNotification[],
  input: { key: string; now: Date },
): Promise<InsertedNotifications> {
  const { now } = input;
  const subscriberIds = [...new Set(rows.map((r) => r.subscriberId))].sort();
  const ids = sql.param(subscriberIds);
  await tx.execute(sql`
    SELECT pg_advisory_xact_lock(hashtextextended(${MESSAGE_LOCK} || s.id::text, 0))
    FROM (SELECT id FROM unnest(${ids}::uuid[]) AS id ORDER BY id OFFSET 0) s`);
  const prefsRows = await queryRows<SubscriberPrefsRow>(
    tx,
    sql`SELECT u.id, ${sql.raw(SUBSCRIBER_CHANNEL)} AS channel,
          u.group_mode, u.group_window_seconds, u.quiet_from, u.quiet_to, u.quiet_bypass_level,
          u.max_per_hour,
          -- The zone is read only for quiet hours: for a national desk the first place's
          -- lookup sorted its thousands of subscriptions in every check of a storm.
          CASE WHEN u.quiet_from IS NULL THEN 'Asia/Shanghai' ELSE coalesce(u.timezone,
            (SELECT p.tz FROM subscriptions s JOIN places p ON p.id = s.place_id
             WHERE s.subscriber_id = u.id ORDER BY s.created_at, s.place_id LIMIT 1),
            'Asia/Shanghai') END AS timezone
        FROM subscribers u WHERE u.id = ANY(${ids}::uuid[])`,
  );
  const prefs = new Map(prefsRows.map((r) => [r.id, prefsOf(r)]));
  const openRows = await queryRows<{
    id: string;
    subscriber_id: string;
    hold: Hold;
    cycle_id: string | null;
    next_attempt_at: Date;
  }>(
    tx,
    sql`SELECT m.id, m.subscriber_id, m.hold, m.cycle_id, m.next_attempt_at
        FROM messages m
        WHERE m.subscriber_id = ANY(${ids}::uuid[]) AND m.status = 'open'
        ORDER BY m.id
        FOR UPDATE OF m`,
  );
  const open = new Map<string, OpenMessage[]>();
  for (const r of openRows) {
    const list = open.get(r.subscriber_id) ?? [];
    list.push({
      id: r.id,
      hold: r.hold,
      cycleId: r.cycle_id,
      sendAt: new Date(r.next_attempt_at),
    });
    open.set(r.subscriber_id, list);
  }
  const limited = subscriberIds.filter((id) => prefs.get(id)?.maxPerHour != null);
  const recent = new Map<string, Date[]>();
  if (limited.length > 0) {
    // Messages sent within the hour, and those still to be sent (each will be, once). A cycle's
    // message planned before the subscriber set the limit collects without a row: it goes out
    // within the minute, and counts as well.
    const sends = await queryRows<{ subscriber_id: string; at: Date }>(
      tx,
      sql`SELECT subscriber_id, coalesce(sent_at, next_attempt_at) AS at FROM messages
          WHERE subscriber_id = ANY(${sql.param(limited)}::uuid[])
            AND ((status = 'sent' AND sent_at > ${now}::timestamptz - interval '1 hour')
                 OR status IN ('open', 'pending', 'retrying'))
          UNION ALL
          SELECT d.subscriber_id, ${now}::timestamptz FROM deliveries d
          WHERE d.subscriber_id = ANY(${sql.param(limited)}::uuid[])
            AND d.created_at > ${now}::timestamptz - interval '1 hour'
            AND ${IN_COLLECTING_MESSAGE}
          GROUP BY d.subscriber_id, d.message_id`,
    );
    for (const s of sends) {
      const list = recent.get(s.subscriber_id) ?? [];
      list.push(new Date(s.at));
      recent.set(s.subscriber_id, list);
    }
  }
  const quiet = subscriberIds.filter((id) => prefs.get(id)?.quietHours != null);
  const urgentChains = new Set<string>();
  if (quiet.length > 0) {
    const chainIds = [...new Set(rows.flatMap((r) => [r.warningId, ...r.supersedes]))];
    const told = await queryRows<{ subscriber_id: string; warning_id: string }>(
      tx,
      sql`SELECT DISTINCT subscriber_id, warning_id FROM deliveries
          WHERE subscriber_id = ANY(${sql.param(quiet)}::uuid[]) AND urgent
            AND warning_id = ANY(${sql.param(chainIds)}::text[])`,
    );
    for (const t of told) urgentChains.add(`${t.subscriber_id}\u0000${t.warning_id}`);
  }

  const planned = new Map<string, PlannedMessage>();
  const placed: { row: NewNotification; messageId: string; urgent: boolean }[] = [];
  for (const row of rows) {
    const p = prefs.get(row.subscriberId);
    if (!p) continue; // deleted since the subscriptions were read: nobody to tell
    const chain = [row.warningId, ...row.supersedes];
    const chainUrgent = chain.some((w) => urgentChains.has(`${row.subscriberId}\u0000${w}`));
    const urgent = isUrgent(row.level, p.quietHours, chainUrgent);
    // Sticky within this check too: a cancel written beside its warning follows it.
    if (urgent) for (const w of chain) urgentChains.add(`${row.subscriberId}\u0000${w}`);
    const mine = open.get(row.subscriberId) ?? [];
    const sends = recent.get(row.subscriberId) ?? [];
    const placement = placeNotification({
      now,
      prefs: p,
      notification: { level: row.level, urgent, cycleId: row.cycleId },
      open: mine,
      recentSends: sends,
    });
    let messageId: string;
    if ('join' in placement) {
      messageId = placement.join;
    } else {
      const { hold, sendAt, cycleId } = placement.create;
      messageId = ledgerId(now);
      planned.set(messageId, {
        id: messageId,
        subscriberId: row.subscriberId,
        channel: row.channel,
        hold,
        cycleId,
        dueAt: sendAt,
      });
      if (sendAt > now && hold !== null) {
        mine.push({ id: messageId, hold, cycleId, sendAt });
        open.set(row.subscriberId, mine);
      }
      sends.push(sendAt);
      recent.set(row.subscriberId, sends);
    }
    placed.push({ row, messageId, urgent });
  }
  if (placed.length === 0) return NOTHING_INSERTED();

  const column = <T>(pick: (p: (typeof placed)[number]) => T) => sql.param(placed.map(pick));
  const inserted = await queryRows<{
    subscriber_id: string;
    message_id: string;
    warning_id: string;
    urgent: boolean;
  }>(
    tx,
    sql`INSERT INTO deliveries (id, subscriber_id, event_id, cycle_id, place_id, warning_id,
          event_type, occurrence, channel, message_id, urgent, created_at)
        SELECT *, ${now}::timestamptz FROM unnest(
          ${sql.param(ledgerIds(now, placed.length))}::uuid[],
          ${column((p) => p.row.subscriberId)}::uuid[],
          ${column((p) => p.row.eventId)}::bigint[], ${column((p) => p.row.cycleId)}::uuid[],
          ${column((p) => p.row.placeId)}::text[], ${column((p) => p.row.warningId)}::text[],
          ${column((p) => p.row.eventType)}::text[], ${column((p) => p.row.occurrence)}::int[],
          ${column((p) => p.row.channel)}::text[],
          ${column((p) => p.messageId)}::uuid[], ${column((p) => p.urgent)}::boolean[])
        ON CONFLICT DO NOTHING
        RETURNING subscriber_id, message_id, warning_id, urgent`,
  );
  // A planned message is written when at least one of its notifications was: every written
  // notification has its message, and no message is left without one.
  let carried = new Set(inserted.map((r) => r.message_id));
  const heldMessages = [...open.values()].flat().filter((m) => m.hold === 'quiet');
  if (heldMessages.length > 0 && (await gatherHeldChains(tx, inserted, heldMessages, planned))) {
    const still = await queryRows<{ message_id: string }>(
      tx,
      sql`SELECT DISTINCT d.message_id FROM deliveries d
          WHERE ${carriedBy(sql`${sql.param([...planned.keys()])}::uuid[]`)}`,
    );
    carried = new Set(still.map((r) => r.message_id));
  }
  const toWrite = [...planned.values()].filter((m) => carried.has(m.id));
  // Batches by channel: those due now in jobs run at once, the held ones in jobs delayed until
  // their due time (one per channel and time).
  const firstJob = new Map<string, string>();
  const seen = new Map<string, number>();
  for (const m of toWrite) {
    const group = m.dueAt <= now ? m.channel : `${m.channel}_h${m.dueAt.getTime()}_`;
    const nth = seen.get(group) ?? 0;
    seen.set(group, nth + 1);
    firstJob.set(
      m.id,
      `${input.key}_s_${group}${Math.floor(nth / kindOf(m.channel).firstAttemptBatch)}`,
    );
  }
  if (toWrite.length > 0) {
    const mcol = <T>(pick: (m: PlannedMessage) => T) => sql.param(toWrite.map(pick));
    await tx.execute(sql`
      INSERT INTO messages (id, subscriber_id, channel, status, hold, cycle_id, next_attempt_at,
        first_job_id, created_at, updated_at)
      SELECT v.id, v.subscriber_id, v.channel,
        CASE WHEN v.due > ${now}::timestamptz THEN 'open' ELSE 'pending' END,
        v.hold, v.cycle_id, v.due, v.first_job_id, ${now}::timestamptz, ${now}::timestamptz
      FROM unnest(${mcol((m) => m.id)}::uuid[], ${mcol((m) => m.subscriberId)}::uuid[],
        ${mcol((m) => m.channel)}::text[], ${mcol((m) => m.hold)}::text[],
        ${mcol((m) => m.cycleId)}::uuid[], ${mcol((m) => m.dueAt.toISOString())}::timestamptz[],
        ${mcol((m) => firstJob.get(m.id)!)}::text[])
        AS v(id, subscriber_id, channel, hold, cycle_id, due, first_job_id)`);
  }
  return {
    count: inserted.length,
    releases: [],
    messages: toWrite.map((m) => ({
      id: m.id,
      channel: m.channel,
      firstJobId: firstJob.get(m.id)!,
      dueAt: m.dueAt,
      leased: false,
    })),
  };
}

/**
 * An urgent notification that goes out while earlier states of its chain wait in the quiet
 * hours' message takes them along: the subscriber reads the chain once, in its latest state,
 * now, and the morning's "while you were away" does not bring back a state already superseded
 * (a red typhoon warning told at 03:00 must not reappear as orange at 07:00). The chain is
 * followed through the held notifications' own links (`supersedes`), however many steps back.
 * A held message left with nothing is removed; every notification stays in exactly one message.
 */
async function gatherHeldChains(
  tx: Tx,
  inserted: readonly {
    subscriber_id: string;
    message_id: string;
    warning_id: string;
    urgent: boolean;
  }[],
  heldMessages: readonly OpenMessage[],
  planned: ReadonlyMap<string, PlannedMessage>,
): Promise<boolean> {
  const heldIds = new Set(heldMessages.map((m) => m.id));
  const urgent = inserted.filter(
    (r) => r.urgent && !heldIds.has(r.message_id) && planned.get(r.message_id)?.hold !== 'quiet',
  );
  if (urgent.length === 0) return false;
  const held = await queryRows<{
    id: string;
    subscriber_id: string;
    message_id: string;
    warning_id: string;
    supersedes: string[];
  }>(
    tx,
    sql`SELECT d.id, d.subscriber_id, d.message_id, d.warning_id, e.supersedes
        FROM deliveries d JOIN events e ON e.id = d.event_id
        WHERE ${carriedBy(sql`${sql.param([...heldIds])}::uuid[]`)}`,
  );
  const moves = new Map<string, string[]>();
  const emptied = new Set<string>();
  for (const row of urgent) {
    const mine = held.filter((h) => h.subscriber_id === row.subscriber_id);
    if (mine.length === 0) continue;
    const event = await queryRows<{ supersedes: string[] }>(
      tx,
      sql`SELECT e.supersedes FROM deliveries d JOIN events e ON e.id = d.event_id
          WHERE d.subscriber_id = ${row.subscriber_id} AND d.warning_id = ${row.warning_id}
            AND ${carriedBy(sql`ARRAY[${row.message_id}]::uuid[]`)}
          LIMIT 1`,
    );
    const chain = new Set([row.warning_id, ...(event[0]?.supersedes ?? [])]);
    for (let grew = true; grew;) {
      grew = false;
      for (const h of mine) {
        if (!chain.has(h.warning_id)) continue;
        for (const earlier of h.supersedes) {
          if (!chain.has(earlier)) {
            chain.add(earlier);
            grew = true;
          }
        }
      }
    }
    const taken = mine.filter((h) => chain.has(h.warning_id)).map((h) => h.id);
    if (taken.length === 0) continue;
    moves.set(row.message_id, [...(moves.get(row.message_id) ?? []), ...taken]);
    for (const h of mine) if (chain.has(h.warning_id)) emptied.add(h.message_id);
  }
  for (const [messageId, ids] of moves) {
    await tx.execute(sql`
      UPDATE deliveries SET message_id = ${messageId}, urgent = true
      WHERE id = ANY(${sql.param(ids)}::uuid[])`);
  }
  if (emptied.size > 0) {
    await tx.execute(sql`
      DELETE FROM messages m
      WHERE m.id = ANY(${sql.param([...emptied])}::uuid[]) AND m.status = 'open'
        AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE ${carriedBy(sql`ARRAY[m.id]`)})`);
  }
  return moves.size > 0;
}
