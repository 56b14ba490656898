import { sql, type SQL } from 'drizzle-orm';
import { PreparedStatement } from '../db/prepared.js';
import type { EventType } from '../domain/detect.js';
import { channelsWhere } from '../channels/kinds.js';
import type { ChannelAddress } from '../channels/registry.js';
import type { Hold } from '../domain/schedule.js';
import type { Warning } from '../domain/warning.js';
import type { PipelineContext } from '../runtime/context.js';
import type { Channel } from '../channels/kinds.js';
import { carriedBy } from './lookups.js';

/**
 * How a deliver job takes its messages: the first attempts its batch owns are read, the others
 * are claimed, and every message comes with its subscriber and the notifications it carries
 * (src/pipeline/deliver.ts sends them).
 */

/**
 * How long a sender holds a row. Longer than any single send (SMTP and webhook timeouts are
 * well under a minute), so only a crashed sender's claim ever runs out.
 */
export const CLAIM_SECONDS = 120;

/** A deliver job may fire a moment before the row's time (clocks of app and database). */
const EARLY_TOLERANCE_SECONDS = 5;

/**
 * Where a subscriber is sent to and whether they may be: what the deliver job and
 * `qwn test-send` read of a subscriber (src/pipeline/deliver.ts, sendThroughChannel).
 */
export interface SubscriberAddress extends ChannelAddress {
  lang: 'zh' | 'en';
  active: boolean;
  unsubscribed: boolean;
  disabled_reason: string | null;
}

const SUBSCRIBER_ADDRESS_COLUMNS = [
  'email',
  'webhook_url',
  'webhook_secret',
  'robot_kind',
  'robot_url',
  'robot_secret',
  'lang',
  'disabled_reason',
  'quiet_from',
  'quiet_to',
  'timezone',
] as const;

/**
 * The columns of subscriber `alias` that a sent message needs besides whether it may be sent:
 * its address, language, quiet hours and zone. Read by the take, and by a check for the first
 * attempts its process sends without one (`KNOWN_SUBSCRIBER_COLUMNS`).
 */
export const subscriberAddressColumns = (alias: string): string =>
  SUBSCRIBER_ADDRESS_COLUMNS.map((column) => `${alias}.${column}`).join(', ');

/** A claimed message, with its subscriber. */
export interface ClaimedMessage extends SubscriberAddress {
  id: string;
  attempts: number;
  channel: Channel;
  hold: Hold | null;
  quiet_from: string | null;
  quiet_to: string | null;
  /** The subscriber's own time zone (seed `timezone`); null: each place's. */
  timezone: string | null;
  /**
   * The subscriber's row is gone: deleted while a check was writing this message, so the
   * deletion's own statement did not see the message to delete it. Nothing goes (`active` is
   * false too); this only names why.
   */
  deleted: boolean;
}

/** A notification of a claimed message, as its rendering needs it. */
export interface CarriedNotification {
  id: string;
  message_id: string;
  event_type: EventType;
  warning_id: string;
  place_id: string;
  event_id: string;
  record: Omit<Warning, 'raw'>;
  supersedes: string[];
  /** v1: `metadata.attributions` of the answer the event came from; null for v7. */
  attributions: string[] | null;
  detected_at: Date;
  /** Told to a late joiner as in force when they subscribed (src/pipeline/catch-up.ts). */
  in_force: boolean;
  place_name: string | null;
  /** The place's English name, for English subscribers; null when not looked up. */
  place_name_en: string | null;
  place_tz: string | null;
}

/** A message ready to send: what it carries, rendered by the channel. */
export interface Outgoing extends ClaimedMessage {
  notifications: CarriedNotification[];
  /** Its first attempt belongs to this job (read, not claimed): see `FIRST_ATTEMPT_OWNED`. */
  owned: boolean;
  /**
   * When its subscriber was read, on this process's clock, taken before the statement that read
   * them began: a change of the subscriber that this process learns of at or after it means the
   * message is read again before it is sent (src/pipeline/subscriber-changes.ts).
   */
  readAt: number;
}
/** A carried notification as the read returns it: the event's columns only on its first row. */
type CarriedOnce = Omit<CarriedNotification, 'record' | 'supersedes' | 'attributions'> & {
  record: CarriedNotification['record'] | null;
  supersedes: string[] | null;
  attributions: string[] | null;
};

/**
 * A row of the take statement: a message, and one of its notifications when the job owns its
 * first attempt (`n_*`, null otherwise: a claimed message's are read after the claim).
 */
type TakenRow = ClaimedMessage & {
  owned: boolean;
  n_id: string | null;
  n_event_type: EventType | null;
  n_warning_id: string | null;
  n_place_id: string | null;
  n_event_id: string | null;
  n_record: CarriedNotification['record'] | null;
  n_supersedes: string[] | null;
  n_attributions: string[] | null;
  n_detected_at: Date | null;
  n_in_force: boolean | null;
  n_place_name: string | null;
  n_place_name_en: string | null;
  n_place_tz: string | null;
};

/**
 * The notifications of the messages `messageIds`, each event's record on its first row only. A
 * job's notifications mostly share a place and one to three events: each event and place is
 * looked up once, not once per notification. Exported for the test that holds its generic plan
 * to index lookups (test/db/claim-plan.int.test.ts).
 */
export const CARRIED_NOTIFICATIONS = new PreparedStatement<{ messageIds: string[] }>((p) =>
  notificationsOf(sql`${p.messageIds}::uuid[]`),
);

/** `CARRIED_NOTIFICATIONS` of the messages in `messageIds`, an SQL expression of type uuid[]. */
function notificationsOf(messageIds: SQL): SQL {
  return sql`WITH carried AS (
            SELECT d.id, d.message_id, d.event_type, d.warning_id, d.place_id, d.event_id,
                   row_number() OVER (PARTITION BY d.event_id) AS nth
            FROM deliveries d WHERE ${carriedBy(messageIds)}),
          -- Index lookups whatever the plan: a prepared statement soon runs a generic plan,
          -- which guessed hundreds of rows here and hashed every event (records and all) and
          -- every place for each job, 15 ms where the lookups take a tenth of one. OFFSET 0
          -- keeps the planner from flattening a lookup into such a join; the joins below are
          -- between the job's own few rows.
          carried_events AS (
            SELECT e.* FROM (SELECT DISTINCT event_id FROM carried) k
            CROSS JOIN LATERAL (
              SELECT e.id, e.record, e.supersedes, e.attributions, e.detected_at, e.in_force
              FROM events e WHERE e.id = k.event_id OFFSET 0) e),
          carried_places AS (
            SELECT p.* FROM (SELECT DISTINCT place_id FROM carried) k
            CROSS JOIN LATERAL (
              SELECT p.id, p.name, p.name_en, p.tz FROM places p WHERE p.id = k.place_id
              OFFSET 0) p)
          SELECT c.id, c.message_id, c.event_type, c.warning_id, c.place_id,
                 c.event_id::text AS event_id,
                 CASE WHEN c.nth = 1 THEN e.record END AS record,
                 CASE WHEN c.nth = 1 THEN e.supersedes END AS supersedes,
                 CASE WHEN c.nth = 1 THEN e.attributions END AS attributions,
                 e.detected_at, e.in_force, p.name AS place_name, p.name_en AS place_name_en,
                 p.tz AS place_tz
          FROM carried c
          JOIN carried_events e ON e.id = c.event_id
          LEFT JOIN carried_places p ON p.id = c.place_id
          ORDER BY c.message_id, e.detected_at, c.id`;
}

/**
 * A message whose first attempt its planned job owns (`first_job_id`): pending, never tried, and
 * not a robot's. That job sends it without a claim write: the BullMQ job's lock is the lease, and
 * no other job may claim the message while its first attempt is owned (see `claim`). The claim
 * write was a quarter of a storm's ledger row versions (issue 21). A message still collecting
 * ('open') is claimed as before: the claim's row lock is what orders it after the checks still
 * adding to it. A robot's is claimed too: its attempt count tells a post never tried from one
 * that may have reached the group, which decides whether a waiting post may join another.
 */
// "status = 'pending'" spelled as the claim below spells its statuses, so that it does not
// imply the due index's predicate (docs/benchmarks-history.md item 4).
const FIRST_ATTEMPT_OWNED = sql`status <> 'open' AND status <> 'retrying' AND status <> 'sent'
  AND status <> 'dead' AND attempts = 0
  AND channel IN (${sql.raw(channelsWhere((k) => k.ownedFirstAttempt))})`;

interface TakeValues {
  ids: readonly string[];
  /** The deliver job taking them; null for one that owns no first attempt. */
  jobId: string | null;
  now: Date;
}

/**
 * The statement of `claim`: reads the messages among `ids` whose first attempt `jobId` owns,
 * claims the others that are due and free, and returns both with their subscribers. One
 * statement whether or not the job owns first attempts: a null `jobId` owns none. Exported for
 * the test that holds its generic plan to primary-key lookups (test/db/claim-plan.int.test.ts).
 */
export const TAKE_MESSAGES = new PreparedStatement<TakeValues>((p) => {
  // False for a job that owns no first attempt (null `jobId`).
  const ownedByJob = sql`coalesce(first_job_id = ${p.jobId}, false)`;
  return sql`WITH owned AS (
          SELECT id, attempts + 1 AS attempts, channel, hold, subscriber_id
          FROM messages
          WHERE id = ANY(${p.ids}::uuid[]) AND ${ownedByJob} AND ${FIRST_ATTEMPT_OWNED}
            AND next_attempt_at <= ${p.now}::timestamptz + make_interval(secs => ${EARLY_TOLERANCE_SECONDS})),
        claimed AS (
          UPDATE messages SET
            status = CASE WHEN status = 'open' THEN 'pending' ELSE status END,
            attempts = attempts + 1,
            claimed_until = ${p.now}::timestamptz + make_interval(secs => ${CLAIM_SECONDS}),
            updated_at = ${p.now}
          WHERE id = ANY(${p.ids}::uuid[])
            -- Not "status IN ('open', 'pending', 'retrying')": that is the due index's
            -- predicate, and with it the planner may walk every due row to find these few.
            -- The CHECK constraint makes them equal.
            AND status <> 'sent' AND status <> 'dead'
            AND next_attempt_at <= ${p.now}::timestamptz + make_interval(secs => ${EARLY_TOLERANCE_SECONDS})
            AND (claimed_until IS NULL OR claimed_until < ${p.now}::timestamptz)
            AND (attempts > 0 OR first_job_id IS NULL OR ${ownedByJob})
            AND NOT (${ownedByJob} AND ${FIRST_ATTEMPT_OWNED})
          RETURNING id, attempts, channel, hold, subscriber_id),
        taken AS (
          SELECT *, true AS owned FROM owned
          UNION ALL SELECT *, false AS owned FROM claimed),
        -- An owned message waits for no lock, so its notifications come in this statement: a
        -- webhook batch takes one round trip, not two.
        owned_notifications AS (${notificationsOf(sql`ARRAY(SELECT id FROM owned)`)})
        SELECT c.id, c.attempts, c.channel, c.hold, c.subscriber_id, c.owned,
               ${sql.raw(subscriberAddressColumns('s'))}, coalesce(s.active, false) AS active,
               s.unsubscribed_at IS NOT NULL AS unsubscribed, s.id IS NULL AS deleted,
               n.id AS n_id, n.event_type AS n_event_type, n.warning_id AS n_warning_id,
               n.place_id AS n_place_id, n.event_id AS n_event_id, n.record AS n_record,
               n.supersedes AS n_supersedes, n.attributions AS n_attributions,
               n.detected_at AS n_detected_at, n.in_force AS n_in_force,
               n.place_name AS n_place_name, n.place_name_en AS n_place_name_en,
               n.place_tz AS n_place_tz
        -- Outer: a message whose subscriber is gone is still taken, to be ended, not retaken.
        FROM taken c LEFT JOIN subscribers s ON s.id = c.subscriber_id
        LEFT JOIN owned_notifications n ON n.message_id = c.id
        ORDER BY c.id, n.detected_at, n.id`;
});

/**
 * The message of a taken row, without its notifications yet: the row less its notification's
 * columns. Named one by one: filtering the row's entries by name cost 5 µs a message, a storm's
 * largest self time in `claim`.
 */
function messageOfRow(r: TakenRow, readAt: number): Outgoing {
  return {
    id: r.id,
    attempts: r.attempts,
    channel: r.channel,
    hold: r.hold,
    subscriber_id: r.subscriber_id,
    email: r.email,
    webhook_url: r.webhook_url,
    webhook_secret: r.webhook_secret,
    robot_kind: r.robot_kind,
    robot_url: r.robot_url,
    robot_secret: r.robot_secret,
    lang: r.lang,
    active: r.active,
    unsubscribed: r.unsubscribed,
    disabled_reason: r.disabled_reason,
    quiet_from: r.quiet_from,
    quiet_to: r.quiet_to,
    timezone: r.timezone,
    deleted: r.deleted,
    owned: r.owned,
    notifications: [],
    readAt,
  };
}

/**
 * Takes the due messages among `ids` for this attempt; messages sent, dead, not due or held
 * elsewhere are left out. Those whose first attempt `jobId` owns are only read; the others are
 * claimed (`claimed_until`), and an open message that is due stops collecting here (it becomes
 * pending). A message whose first attempt another job owns is never claimed: that job may be
 * sending it right now (the sweeper hands a lost job's messages back first). An owned message's
 * notifications come with it; a claimed message's are read by a second statement: a check that
 * was adding one to it holds its row lock, which the claim waits for, and only a statement begun
 * after that wait sees what the check wrote.
 */
export async function claimMessages(
  ctx: PipelineContext,
  ids: readonly string[],
  jobId: string | undefined,
): Promise<Outgoing[]> {
  const now = ctx.now();
  const taken = await TAKE_MESSAGES.run<TakenRow>(ctx.db, { ids, jobId: jobId ?? null, now });
  if (taken.length === 0) return [];
  const claimed = new Map<string, Outgoing>();
  const rows: CarriedOnce[] = [];
  for (const r of taken) {
    if (!claimed.has(r.id)) claimed.set(r.id, messageOfRow(r, now.getTime()));
    if (r.n_id !== null) {
      rows.push({
        id: r.n_id,
        message_id: r.id,
        event_type: r.n_event_type!,
        warning_id: r.n_warning_id!,
        place_id: r.n_place_id!,
        event_id: r.n_event_id!,
        record: r.n_record,
        supersedes: r.n_supersedes,
        attributions: r.n_attributions,
        detected_at: r.n_detected_at!,
        in_force: r.n_in_force === true,
        place_name: r.n_place_name,
        place_name_en: r.n_place_name_en,
        place_tz: r.n_place_tz,
      });
    }
  }
  // A job's messages mostly carry notifications of one event: its record (a kilobyte or two of
  // JSON) is sent and parsed once, on the first of them, and given to the others here.
  const locked = [...claimed.values()].filter((m) => !m.owned).map((m) => m.id);
  if (locked.length > 0) {
    rows.push(...(await CARRIED_NOTIFICATIONS.run<CarriedOnce>(ctx.db, { messageIds: locked })));
  }
  const events = new Map<
    string,
    Pick<CarriedNotification, 'record' | 'supersedes' | 'attributions'>
  >();
  for (const row of rows) {
    if (row.record !== null) {
      events.set(row.event_id, {
        record: row.record,
        supersedes: row.supersedes ?? [],
        attributions: row.attributions,
      });
    }
  }
  for (const row of rows) {
    const event = events.get(row.event_id);
    // Every event has a first row; without one the statement above is wrong, not the data.
    if (!event) throw new Error(`claim: no record returned for event ${row.event_id}`);
    claimed.get(row.message_id)?.notifications.push({ ...row, ...event });
  }
  return [...claimed.values()];
}
