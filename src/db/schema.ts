import { sql } from 'drizzle-orm';
import {
  bigint,
  bigserial,
  boolean,
  check,
  doublePrecision,
  index,
  integer,
  jsonb,
  pgTable,
  primaryKey,
  text,
  timestamp,
  unique,
  uniqueIndex,
  uuid,
} from 'drizzle-orm/pg-core';

/**
 * The store. Postgres is the truth (docs/design.md, invariant 1); Redis only carries job ids. Check
 * constraints repeat the seed file's rules so that an admin editing with SQL cannot put the
 * state into a shape the code would refuse (invariant 6).
 */

const tstz = (name: string) => timestamp(name, { withTimezone: true, mode: 'date' });
const LEVEL_SQL = sql.raw(`'白色','蓝色','黄色','橙色','红色'`);
/** What a subscription's `events` filter may list: `resumed` goes with `expired`. */
const EVENT_SQL = sql.raw(`'new','update','cancel','expired'`);
/** Every event type; `resumed` is a warning back in force after its end was told. */
const EVENT_TYPE_SQL = sql.raw(`'new','update','cancel','expired','resumed'`);

/** A subscribed place: a Location ID (v7) with what rendering needs. */
export const places = pgTable(
  'places',
  {
    id: text('id').primaryKey(),
    name: text('name').notNull(),
    /** The upstream's English name (`lang=en`), looked up for places English subscribers watch. */
    nameEn: text('name_en'),
    lat: doublePrecision('lat'),
    lon: doublePrecision('lon'),
    tz: text('tz').notNull().default('Asia/Shanghai'),
    adm1: text('adm1'),
    adm2: text('adm2'),
    country: text('country'),
    /** When the upstream was last asked about this place, and when it last answered well. */
    lastFetchedAt: tstz('last_fetched_at'),
    lastOkAt: tstz('last_ok_at'),
    /** The last cycle whose check of this place was applied: a re-run check does nothing. */
    lastCycleId: uuid('last_cycle_id'),
    createdAt: tstz('created_at').notNull().defaultNow(),
  },
  (t) => [
    check('places_id_format', sql`${t.id} ~ '^[A-Za-z0-9]{1,32}$'`),
    check('places_name_present', sql`length(btrim(${t.name})) > 0`),
    check('places_lat_range', sql`${t.lat} IS NULL OR ${t.lat} BETWEEN -90 AND 90`),
    check('places_lon_range', sql`${t.lon} IS NULL OR ${t.lon} BETWEEN -180 AND 180`),
    // The places at a v1 point (`subscriptionsNear`, src/detection/point-subject.ts). Checks never
    // change coordinates, so their bookkeeping updates stay HOT.
    index('places_coordinates_idx').on(t.lat, t.lon),
  ],
);

export const subscribers = pgTable(
  'subscribers',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    name: text('name'),
    /** Its identity compares without letter case (`subscribers_email_lower_unique`). */
    email: text('email'),
    webhookUrl: text('webhook_url').unique('subscribers_webhook_url_unique'),
    webhookSecret: text('webhook_secret'),
    /**
     * A chat robot (docs/messages.md): its vendor, its URL (identity and credential at once, never
     * logged) and the DingTalk / Feishu signing secret when the robot was created with signing.
     */
    robotKind: text('robot_kind'),
    robotUrl: text('robot_url').unique('subscribers_robot_url_unique'),
    robotSecret: text('robot_secret'),
    lang: text('lang').notNull().default('zh'),
    active: boolean('active').notNull().default(true),
    /** Why delivery stopped on its own (a webhook answering 410); null while healthy. */
    disabledReason: text('disabled_reason'),
    /**
     * How notifications are combined into messages (docs/messages.md): 'none', 'cycle' or 'window'
     * (with `groupWindowSeconds`); null = the channel's default (email 'cycle', webhook 'none').
     */
    groupMode: text('group_mode'),
    groupWindowSeconds: integer('group_window_seconds'),
    /** IANA time zone of the quiet hours; null = the first place's zone, else Asia/Shanghai. */
    timezone: text('timezone'),
    /** Quiet hours, local "HH:MM" (docs/messages.md; "HH:MM:SS" too, for demos); both null = none. */
    quietFrom: text('quiet_from'),
    quietTo: text('quiet_to'),
    /** A notification at or above this level is never held by the quiet hours. */
    quietBypassLevel: text('quiet_bypass_level'),
    maxPerHour: integer('max_per_hour'),
    /** Set by the one-click unsubscribe (docs/subscribers.md); only `qwn seed --resubscribe` clears it. */
    unsubscribedAt: tstz('unsubscribed_at'),
    createdAt: tstz('created_at').notNull().defaultNow(),
    updatedAt: tstz('updated_at').notNull().defaultNow(),
  },
  (t) => [
    check(
      'subscribers_one_address',
      sql`num_nonnulls(${t.email}, ${t.webhookUrl}, ${t.robotUrl}) = 1`,
    ),
    // One mailbox a row: `A@X.ORG` is `a@x.org`, so an unsubscribe holds in any letter case.
    uniqueIndex('subscribers_email_lower_unique').on(sql`lower(${t.email})`),
    check(
      'subscribers_email_format',
      sql`${t.email} IS NULL OR ${t.email} ~ '^[^@[:space:][:cntrl:],;<>"]+@[^@[:space:][:cntrl:],;<>"]+\\.[^@[:space:][:cntrl:],;<>"]+$'`,
    ),
    check(
      'subscribers_webhook_format',
      sql`${t.webhookUrl} IS NULL OR ${t.webhookUrl} ~ '^https?://[^/@[:space:]]+(/[^[:space:]]*)?$'`,
    ),
    check(
      'subscribers_webhook_secret',
      sql`(${t.webhookUrl} IS NULL AND ${t.webhookSecret} IS NULL) OR (${t.webhookUrl} IS NOT NULL AND ${t.webhookSecret} IS NOT NULL AND ${t.webhookSecret} ~ '^whsec_[A-Za-z0-9+/]{32,88}={0,2}$')`,
    ),
    check(
      'subscribers_robot_format',
      sql`${t.robotUrl} IS NULL OR ${t.robotUrl} ~ '^https?://[^/@[:space:]]+(/[^[:space:]]*)?$'`,
    ),
    check(
      'subscribers_robot_kind',
      sql`(${t.robotUrl} IS NULL) = (${t.robotKind} IS NULL) AND (${t.robotKind} IS NULL OR ${t.robotKind} IN ('wecom', 'dingtalk', 'feishu'))`,
    ),
    check(
      'subscribers_robot_secret',
      sql`${t.robotSecret} IS NULL OR (${t.robotKind} IN ('dingtalk', 'feishu') AND length(btrim(${t.robotSecret})) > 0)`,
    ),
    check('subscribers_lang', sql`${t.lang} IN ('zh', 'en')`),
    check(
      'subscribers_group',
      sql`(${t.groupMode} IS NULL OR ${t.groupMode} IN ('none', 'cycle', 'window')) AND (${t.groupMode} = 'window') = (${t.groupWindowSeconds} IS NOT NULL) AND (${t.groupWindowSeconds} IS NULL OR ${t.groupWindowSeconds} BETWEEN 1 AND 3600)`,
    ),
    check(
      'subscribers_timezone',
      sql`${t.timezone} IS NULL OR ${t.timezone} ~ '^[A-Za-z][A-Za-z0-9_+-]*(/[A-Za-z0-9_+-]+)*$'`,
    ),
    check(
      'subscribers_quiet_hours',
      sql`(${t.quietFrom} IS NULL) = (${t.quietTo} IS NULL) AND (${t.quietFrom} IS NULL OR (${t.quietFrom} ~ '^([01][0-9]|2[0-3]):[0-5][0-9](:[0-5][0-9])?$' AND ${t.quietTo} ~ '^([01][0-9]|2[0-3]):[0-5][0-9](:[0-5][0-9])?$' AND ${t.quietFrom} <> ${t.quietTo})) AND (${t.quietBypassLevel} IS NULL OR (${t.quietFrom} IS NOT NULL AND ${t.quietBypassLevel} IN (${LEVEL_SQL})))`,
    ),
    check(
      'subscribers_max_per_hour',
      sql`${t.maxPerHour} IS NULL OR ${t.maxPerHour} BETWEEN 1 AND 1000`,
    ),
  ],
);

/**
 * `qwn test-send`: each marked test message an operator sent through a subscriber's channel and
 * what the channel answered. Kept apart from the ledger: a test is never a warning notification.
 */
export const testSends = pgTable('test_sends', {
  id: uuid('id').primaryKey(),
  subscriberId: uuid('subscriber_id')
    .notNull()
    .references(() => subscribers.id, { onDelete: 'cascade' }),
  channel: text('channel').notNull(),
  sentAt: tstz('sent_at').notNull(),
  ok: boolean('ok').notNull(),
  detail: text('detail'),
});

/**
 * A subscriber row changed in whether or where it receives: paused, disabled, unsubscribed,
 * deleted, or given another address or secret. Written by the statement triggers of migration
 * 0028 (so an edit by SQL counts too), read by every sending process
 * (src/pipeline/subscriber-changes.ts): a message read before the change is read again, not
 * sent as it was. `changed_at` is the row change's own clock time, not its transaction's start.
 */
export const subscriberChanges = pgTable(
  'subscriber_changes',
  {
    subscriberId: uuid('subscriber_id').notNull(),
    changedAt: tstz('changed_at')
      .notNull()
      .default(sql`clock_timestamp()`),
  },
  (t) => [index('subscriber_changes_at_idx').on(t.changedAt)],
);

export const subscriptions = pgTable(
  'subscriptions',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    subscriberId: uuid('subscriber_id')
      .notNull()
      .references(() => subscribers.id, { onDelete: 'cascade' }),
    placeId: text('place_id')
      .notNull()
      .references(() => places.id),
    /** null = every level. */
    minLevel: text('min_level'),
    /** Type names or codes; null = every type. */
    types: text('types').array(),
    /** Event kinds; null = all four. */
    events: text('events').array(),
    /**
     * v1 mode: the watched points (`pointKey`, src/domain/points.ts) of this subscription, from
     * the seed's `lon,lat` entries; null = the place's own coordinates.
     */
    points: text('points').array(),
    /**
     * The next cycle tells this subscription the warnings in force at its place (README, promises,
     * late joiners): set when it is made, its filter changes or its subscriber resubscribes.
     */
    catchUp: boolean('catch_up').notNull().default(true),
    createdAt: tstz('created_at').notNull().defaultNow(),
  },
  (t) => [
    unique('subscriptions_subscriber_place').on(t.subscriberId, t.placeId),
    // The few subscriptions a cycle's catch-up reads (src/pipeline/catch-up.ts).
    index('subscriptions_catch_up_idx')
      .on(t.id)
      .where(sql`${t.catchUp}`),
    index('subscriptions_place_idx').on(t.placeId),
    check('subscriptions_min_level', sql`${t.minLevel} IS NULL OR ${t.minLevel} IN (${LEVEL_SQL})`),
    check(
      'subscriptions_types',
      sql`${t.types} IS NULL OR (cardinality(${t.types}) > 0 AND array_position(${t.types}, '') IS NULL AND array_position(${t.types}, NULL) IS NULL)`,
    ),
    check(
      'subscriptions_events',
      sql`${t.events} IS NULL OR (cardinality(${t.events}) > 0 AND ${t.events} <@ ARRAY[${EVENT_SQL}]::text[])`,
    ),
    check(
      'subscriptions_points',
      sql`${t.points} IS NULL OR (cardinality(${t.points}) > 0 AND array_position(${t.points}, NULL) IS NULL)`,
    ),
    // Only subscriptions with points of their own: most watch their place's coordinates, and
    // each of those took a null entry that every v1 check's lookup read through (migration 0019).
    // Written straight into the index, not through GIN's pending list, which only a vacuum
    // empties and every search reads whole meanwhile: subscriptions change far less often than
    // points are checked.
    index('subscriptions_points_idx')
      .using('gin', t.points)
      .with({ fastupdate: false })
      .where(sql`${t.points} IS NOT NULL`),
  ],
);

/**
 * v1 mode: a watched point, coordinates rounded to two decimals (the API's own precision), shared
 * by every subscription there: a thousand subscribers in one district cost one call per cycle.
 * Its warnings are tracked in `warnings` under `place_id` = this id.
 */
export const alertPoints = pgTable(
  'alert_points',
  {
    /** `pointKey`: "lat,lon", latitude first as in the v1 path, e.g. "30.27,120.16". */
    id: text('id').primaryKey(),
    lat: doublePrecision('lat').notNull(),
    lon: doublePrecision('lon').notNull(),
    /** `metadata.tag` of the last successful answer: the same tag again means nothing changed. */
    lastTag: text('last_tag'),
    /** `metadata.attributions` of the last successful answer. */
    attributions: text('attributions').array(),
    lastFetchedAt: tstz('last_fetched_at'),
    lastOkAt: tstz('last_ok_at'),
    /** The last cycle whose check of this point was applied: a re-run check does nothing. */
    lastCycleId: uuid('last_cycle_id'),
    /**
     * When the point took over the warnings still open from v7 at the places watching it
     * (src/detection/adopt-v7.ts): null until its first applied v1 check.
     */
    v7AdoptedAt: tstz('v7_adopted_at'),
    createdAt: tstz('created_at').notNull().defaultNow(),
  },
  (t) => [
    check('alert_points_lat_range', sql`${t.lat} BETWEEN -90 AND 90`),
    check('alert_points_lon_range', sql`${t.lon} BETWEEN -180 AND 180`),
  ],
);

/** Every warning seen at a place, with its tracking state (docs/design.md invariant 3 and 4). */
export const warnings = pgTable(
  'warnings',
  {
    placeId: text('place_id').notNull(),
    warningId: text('warning_id').notNull(),
    state: text('state').notNull(),
    title: text('title').notNull(),
    level: text('level').notNull(),
    typeCode: text('type_code'),
    typeName: text('type_name'),
    status: text('status').notNull(),
    startTime: tstz('start_time'),
    endTime: tstz('end_time'),
    /** The normalized record (src/domain/warning.ts) and the record exactly as received. */
    record: jsonb('record').notNull(),
    raw: jsonb('raw'),
    firstSeen: tstz('first_seen').notNull(),
    lastSeen: tstz('last_seen').notNull(),
    misses: integer('misses').notNull().default(0),
    /** When the cycle that counted its last miss started (src/domain/detect.ts, countsAsMiss). */
    lastMissAt: tstz('last_miss_at'),
    closedAt: tstz('closed_at'),
    /** How often it came back after its end was told (README, promises, "Back in force"). */
    occurrence: integer('occurrence').notNull().default(0),
  },
  (t) => [
    primaryKey({ name: 'warnings_pk', columns: [t.placeId, t.warningId] }),
    index('warnings_open_idx')
      .on(t.placeId)
      .where(sql`${t.state} = 'open'`),
    // Not last_seen, which every check rewrites: pruning finds rows by first_seen (migration
    // 0004, which also leaves room on each page so that the rewrite stays a HOT update).
    index('warnings_first_seen_idx').on(t.firstSeen),
    // Retention asks whether a warning id is still tracked anywhere (src/pipeline/retention.ts).
    // Never rewritten, so it keeps last_seen's update HOT.
    index('warnings_warning_idx').on(t.warningId),
    check('warnings_state', sql`${t.state} IN ('open', 'superseded', 'cancelled', 'expired')`),
    check('warnings_level', sql`${t.level} IN (${LEVEL_SQL}, 'unknown')`),
    check('warnings_status', sql`${t.status} IN ('active', 'update', 'cancel')`),
    check('warnings_misses', sql`${t.misses} >= 0`),
    check('warnings_occurrence', sql`${t.occurrence} >= 0`),
    check('warnings_closed', sql`(${t.state} = 'open') = (${t.closedAt} IS NULL)`),
  ],
);

/** A poll cycle: one warning-list call and the checks it caused. */
/**
 * The deployment's upstream source under `QWEATHER_ALERT_SOURCE=auto` (docs/configuration.md): no row
 * while v7 is served; one row once QWeather retired it, so that every worker and `poll --once`
 * poll v1 from then on. One row at most (the key is always true).
 */
export const upstreamSource = pgTable(
  'upstream_source',
  {
    singleton: boolean('singleton').primaryKey().default(true),
    source: text('source').notNull(),
    switchedAt: tstz('switched_at').notNull().defaultNow(),
    /** What made the switch: the operation and the upstream's answer. */
    reason: text('reason').notNull(),
  },
  (t) => [
    check('upstream_source_singleton', sql`${t.singleton}`),
    check('upstream_source_source', sql`${t.source} IN ('v1')`),
  ],
);

/**
 * Evidence that QWeather retired v7 (README, promises): under `auto`, the cycles in a row whose v7
 * warning calls answered 403 "Deprecated" or a JSON 404. Three in a row switch the deployment to
 * v1; a cycle whose list call answers otherwise ends the streak (the row is deleted). One row
 * at most.
 */
export const v7Retirement = pgTable(
  'v7_retirement',
  {
    singleton: boolean('singleton').primaryKey().default(true),
    cycles: integer('cycles').notNull(),
    lastCycleId: uuid('last_cycle_id').notNull(),
    firstSeenAt: tstz('first_seen_at').notNull(),
    /** The last such answer: the operation and what it said. */
    reason: text('reason').notNull(),
  },
  (t) => [
    check('v7_retirement_singleton', sql`${t.singleton}`),
    check('v7_retirement_cycles', sql`${t.cycles} >= 1`),
  ],
);

export const pollCycles = pgTable(
  'poll_cycles',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    /** The scheduler job that started it, so a retried poll job reuses its cycle. */
    jobKey: text('job_key').unique('poll_cycles_job_key_unique'),
    status: text('status').notNull().default('running'),
    startedAt: tstz('started_at').notNull().defaultNow(),
    finishedAt: tstz('finished_at'),
    listed: integer('listed').notNull().default(0),
    planned: integer('planned').notNull().default(0),
    checked: integer('checked').notNull().default(0),
    upstreamCalls: integer('upstream_calls').notNull().default(0),
    /** Calls with `lang=en` for English subscribers: extra to the checks (README, promises). */
    englishCalls: integer('english_calls').notNull().default(0),
    upstreamErrors: integer('upstream_errors').notNull().default(0),
    eventsNew: integer('events_new').notNull().default(0),
    eventsUpdate: integer('events_update').notNull().default(0),
    eventsCancel: integer('events_cancel').notNull().default(0),
    eventsExpired: integer('events_expired').notNull().default(0),
    eventsResumed: integer('events_resumed').notNull().default(0),
    /** Records of the cycle's answers that could not be read (README, promises). */
    skippedRecords: integer('skipped_records').notNull().default(0),
    deliveriesCreated: integer('deliveries_created').notNull().default(0),
    error: text('error'),
    /** The warning source the cycle polled: v7 or v1 (docs/configuration.md). */
    source: text('source'),
    /**
     * When the cycle's "cycle" messages stopped collecting (src/ledger/release.ts):
     * a check adds to them only while this is null.
     */
    releasedAt: tstz('released_at'),
  },
  (t) => [
    check('poll_cycles_status', sql`${t.status} IN ('running', 'done', 'failed')`),
    index('poll_cycles_started_idx').on(t.startedAt),
    // The cycles still collecting: one or two, read by the sweeper and the metrics.
    index('poll_cycles_collecting_idx')
      .on(t.startedAt)
      .where(sql`${t.releasedAt} IS NULL`),
  ],
);

export const events = pgTable(
  'events',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    cycleId: uuid('cycle_id').references(() => pollCycles.id, { onDelete: 'set null' }),
    placeId: text('place_id').notNull(),
    warningId: text('warning_id').notNull(),
    type: text('type').notNull(),
    supersedes: text('supersedes')
      .array()
      .notNull()
      .default(sql`'{}'::text[]`),
    /** The warning as it stood when the event was detected: what notifications render. */
    record: jsonb('record').notNull(),
    /** v1: `metadata.attributions` of the answer the event came from; null for v7. */
    attributions: text('attributions').array(),
    /** The warning's occurrence: a warning that resumed has its `expired` once per occurrence. */
    occurrence: integer('occurrence').notNull().default(0),
    /**
     * Not detected, but told to late joiners as in force when they subscribed (src/pipeline/
     * catch-up.ts): one per cycle, place and warning, beside the warning's detected events.
     */
    inForce: boolean('in_force').notNull().default(false),
    detectedAt: tstz('detected_at').notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex('events_place_warning_type')
      .on(t.placeId, t.warningId, t.type, t.occurrence)
      .where(sql`NOT ${t.inForce}`),
    uniqueIndex('events_in_force_once')
      .on(t.cycleId, t.placeId, t.warningId)
      .where(sql`${t.inForce}`),
    index('events_cycle_idx').on(t.cycleId),
    // Retention finds old events by age (src/pipeline/retention.ts).
    index('events_detected_idx').on(t.detectedAt),
    // A v1 check asks whether another point reported its alerts this cycle (`reportedElsewhere`,
    // src/detection/point-subject.ts): by cycle alone, it read every event of the cycle so far.
    index('events_warning_idx').on(t.warningId),
    check('events_type', sql`${t.type} IN (${EVENT_TYPE_SQL})`),
  ],
);

/**
 * The notification ledger: one row per (subscriber, warning id, event type) — docs/design.md invariant 2.
 * A notification is decided once; what is sent is its message (`message_id`), which may carry
 * other notifications of the same subscriber too (invariant 8). The table keeps its first name.
 */
export const deliveries = pgTable(
  'deliveries',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    /**
     * No foreign key, for the reason of `eventId`: each row's check locked the subscriber row
     * (FOR KEY SHARE: a WAL record, and a multixact for the desks every check reaches), 118,403
     * of a storm's 1.51 million WAL records (migration 0015). Statement triggers refuse a row
     * naming a missing subscriber and delete a subscriber's notifications and messages with it.
     */
    subscriberId: uuid('subscriber_id').notNull(),
    /**
     * The event, inserted in the same transaction as its deliveries. No foreign key: its check
     * locked the event row once per delivery row and tripled the fan-out insert of a storm
     * (migration 0005). Statement triggers do its work instead: an insert naming a missing
     * event is refused (0006), and deleting an event deletes its deliveries (0005).
     */
    eventId: bigint('event_id', { mode: 'number' }).notNull(),
    /**
     * The cycle whose check wrote it, as its event's. Not indexed: readers go through the events
     * of the cycle (`createdInCycle`, src/ledger/lookups.ts; migration 0016).
     */
    cycleId: uuid('cycle_id'),
    placeId: text('place_id').notNull(),
    warningId: text('warning_id').notNull(),
    eventType: text('event_type').notNull(),
    /** The warning's occurrence (as on its event): one notification per occurrence. */
    occurrence: integer('occurrence').notNull().default(0),
    channel: text('channel').notNull(),
    /**
     * The message that carries it. Written in the same statement as the message (no foreign
     * key, for the reason of `eventId`); every notification has exactly one.
     */
    messageId: uuid('message_id').notNull(),
    /**
     * At or above the subscriber's quiet-hours bypass level, or in a chain that was: never held
     * by quiet hours, and neither is anything later in its chain (invariant 9).
     */
    urgent: boolean('urgent').notNull().default(false),
    createdAt: tstz('created_at').notNull().defaultNow(),
  },
  (t) => [
    unique('deliveries_once').on(t.subscriberId, t.warningId, t.eventType, t.occurrence),
    // A direct notification is its own message (message_id = id): the primary key finds it.
    index('deliveries_message_idx')
      .on(t.messageId)
      .where(sql`${t.messageId} <> ${t.id}`),
    // An event's deliveries: retention asks whether any is left, and the trigger of 0005
    // deletes them with the event, without reading the whole table.
    index('deliveries_event_idx').on(t.eventId),
    index('deliveries_created_idx').on(t.createdAt),
    check('deliveries_event_type', sql`${t.eventType} IN (${EVENT_TYPE_SQL})`),
    check('deliveries_channel', sql`${t.channel} IN ('email', 'webhook', 'robot')`),
  ],
);

/**
 * What is sent: one email, one webhook POST or one chat-robot post carrying one or more notifications of one
 * subscriber (docs/messages.md). Its id is the webhook-id and the email Message-ID, on every retry
 * and redelivery; a message of one notification takes that notification's id. Written in the
 * statement that writes its first notification (the outbox, docs/design.md), except a cycle's
 * message, which collects without a row and is written by the cycle's release. `open` collects:
 * notifications of the subscriber may still join it until `next_attempt_at`, when it is due.
 * Stored with fillfactor 50 (as the ledger was, migration 0003) so that a claim is a HOT update.
 */
export const messages = pgTable(
  'messages',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    /** Its notifications' subscriber; no foreign key, as on `deliveries` (migration 0015). */
    subscriberId: uuid('subscriber_id').notNull(),
    channel: text('channel').notNull(),
    status: text('status').notNull().default('pending'),
    /** Why it waited before its first attempt: grouping, quiet hours or the hourly limit. */
    hold: text('hold'),
    /** `hold = 'cycle'`: the cycle it collects, released when that cycle's checks are done. */
    cycleId: uuid('cycle_id'),
    attempts: integer('attempts').notNull().default(0),
    nextAttemptAt: tstz('next_attempt_at').notNull().defaultNow(),
    /** A sender holds the row until then; a crashed sender's claim simply runs out. */
    claimedUntil: tstz('claimed_until'),
    /** The deliver job that carries the first attempt (several messages share one). */
    firstJobId: text('first_job_id'),
    lastError: text('last_error'),
    sentAt: tstz('sent_at'),
    createdAt: tstz('created_at').notNull().defaultNow(),
    updatedAt: tstz('updated_at').notNull().defaultNow(),
  },
  (t) => [
    index('messages_due_idx')
      .on(t.nextAttemptAt)
      .where(sql`${t.status} IN ('open', 'pending', 'retrying')`),
    index('messages_open_idx')
      .on(t.subscriberId)
      .where(sql`${t.status} = 'open'`),
    index('messages_subscriber_sent_idx').on(t.subscriberId, t.sentAt),
    // No index on created_at: retention removes a message in the statement that removes its
    // last notification, found through `deliveries_created_idx` (migration 0017).
    check('messages_status', sql`${t.status} IN ('open', 'pending', 'sent', 'retrying', 'dead')`),
    check(
      'messages_hold',
      sql`${t.hold} IS NULL OR ${t.hold} IN ('cycle', 'window', 'quiet', 'throttle')`,
    ),
    check('messages_channel', sql`${t.channel} IN ('email', 'webhook', 'robot')`),
    check('messages_attempts', sql`${t.attempts} >= 0`),
  ],
);
