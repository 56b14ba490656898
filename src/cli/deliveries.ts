import {
  cutShort,
  DEFAULT_LIST_LIMIT,
  DELIVERY_STATUSES,
  isDeliveryStatus,
  listDeliveries,
  subscriberKnown,
  type DeliveryFilter,
  type DeliveryListing,
  type DeliveryStatus,
} from '../ledger/index.js';
import { loadConfig } from '../config.js';
import { openPostgres } from '../db/client.js';
import { parseCommandLine, UsageError } from './command.js';
import { instantOfWallTime, localTime, utcOfWallTime } from './local-time.js';
import { formatTable, type Column } from './table.js';
import type { CliIo } from './io.js';

const USAGE =
  'usage: qwn deliveries [--status held|pending|sent|retrying|dead] ' +
  '[--subscriber EMAIL|URL|NAME|ID|HOST#FINGERPRINT] [--since ISO-time] [--until ISO-time] ' +
  '[--limit N] [--json]';

/** A listing is for reading; the whole error is in --json. */
const ERROR_WIDTH = 60;
const MAX_LIMIT = 100_000;

/** An ISO 8601 time for --since; a date or a time without an offset is the terminal's. */
export function parseSince(value: string, timeZone: string): Date {
  return parseTime(value, '--since', timeZone);
}

/**
 * An ISO 8601 time for a time option: `2026-07-01`, `2026-07-01 08:00[:30[.250]]`, with `T` or a
 * space, and an offset (`Z`, `+08:00`, `-0500`) or none, which means the terminal's zone (`TZ`).
 */
export function parseTime(value: string, flag: string, timeZone: string): Date {
  const match =
    /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,3})\d*)?)?(Z|[+-]\d{2}:?\d{2})?)?$/i.exec(
      value.trim(),
    );
  const at = match ? instantOf(match, timeZone) : null;
  if (!at || Number.isNaN(at.getTime())) {
    throw new UsageError(
      `${flag} must be an ISO 8601 time such as 2026-07-01T08:00:00+08:00 (no offset: ${timeZone})`,
    );
  }
  return at;
}

function instantOf(match: RegExpExecArray, timeZone: string): Date | null {
  const [, year, month, day, hour, minute, second, fraction, zone] = match;
  const wall = {
    year: Number(year),
    month: Number(month),
    day: Number(day),
    hour: Number(hour ?? 0),
    minute: Number(minute ?? 0),
    second: Number(second ?? 0),
    ms: Number((fraction ?? '0').padEnd(3, '0')),
  };
  if (wall.month < 1 || wall.month > 12 || wall.day < 1 || wall.day > 31) return null;
  if (wall.hour > 23 || wall.minute > 59 || wall.second > 59) return null;
  if (!zone) return instantOfWallTime(wall, timeZone);
  const asUtc = utcOfWallTime(wall);
  if (zone.toUpperCase() === 'Z') return new Date(asUtc);
  const sign = zone.startsWith('-') ? -1 : 1;
  const digits = zone.slice(1).replace(':', '');
  const offset = sign * (Number(digits.slice(0, 2)) * 60 + Number(digits.slice(2))) * 60_000;
  return new Date(asUtc - offset);
}

export function parseStatus(value: string): DeliveryStatus {
  if (!isDeliveryStatus(value)) {
    throw new UsageError(
      `unknown status "${value}"; expected one of ${DELIVERY_STATUSES.join(', ')}`,
    );
  }
  return value;
}

/**
 * The ledger's columns, times in `timeZone`: each notification and its message; `qwn redeliver`
 * shows a subset.
 */
export function ledgerColumns(timeZone: string): readonly Column<DeliveryListing>[] {
  return [
    { header: 'id', value: (d) => d.id },
    { header: 'message', value: (d) => d.messageId },
    { header: 'created', value: (d) => localTime(d.createdAt, timeZone) },
    {
      header: 'status',
      value: (d) => (d.hold && d.status === 'held' ? `held (${d.hold})` : d.status),
    },
    { header: 'attempts', value: (d) => d.attempts, align: 'right' },
    { header: 'channel', value: (d) => d.robotKind ?? d.channel },
    {
      header: 'subscriber',
      value: (d) => (d.subscriberActive ? d.subscriber : `${d.subscriber} (off)`),
    },
    { header: 'place', value: (d) => d.placeName ?? d.placeId },
    { header: 'event', value: (d) => d.eventType },
    { header: 'warning', value: (d) => d.warningId },
    { header: 'next attempt', value: (d) => localTime(d.nextAttemptAt, timeZone) },
    { header: 'last error', value: (d) => cutShort(d.lastError, ERROR_WIDTH) },
  ];
}

export function formatDeliveries(rows: readonly DeliveryListing[], timeZone: string): string {
  return formatTable(rows, ledgerColumns(timeZone));
}

function deliveriesJson(rows: readonly DeliveryListing[]): string {
  return JSON.stringify(
    rows.map((d) => ({
      ...d,
      createdAt: d.createdAt.toISOString(),
      nextAttemptAt: d.nextAttemptAt?.toISOString() ?? null,
      sentAt: d.sentAt?.toISOString() ?? null,
    })),
    null,
    2,
  );
}

/** `qwn deliveries`: the notifications and their messages, newest first (docs/operations.md). */
export async function run(argv: string[], io: CliIo): Promise<number> {
  const { values } = parseCommandLine(
    argv,
    {
      status: { type: 'string' },
      subscriber: { type: 'string' },
      since: { type: 'string' },
      until: { type: 'string' },
      limit: { type: 'string' },
      json: { type: 'boolean' },
    },
    'deliveries',
  );
  if (values.help) {
    io.out(USAGE);
    return 0;
  }

  const filter: DeliveryFilter = { limit: DEFAULT_LIST_LIMIT };
  if (values.status !== undefined) filter.status = parseStatus(values.status);
  if (values.subscriber !== undefined) filter.subscriber = values.subscriber.trim();
  if (values.since !== undefined) filter.since = parseSince(values.since, io.timeZone);
  if (values.until !== undefined) filter.until = parseTime(values.until, '--until', io.timeZone);
  if (filter.since && filter.until && filter.since >= filter.until) {
    throw new UsageError('--since must be earlier than --until');
  }
  if (values.limit !== undefined) {
    const limit = /^\d+$/.test(values.limit.trim()) ? Number(values.limit) : NaN;
    if (!(limit >= 1 && limit <= MAX_LIMIT)) {
      throw new UsageError(`--limit must be a whole number from 1 to ${MAX_LIMIT}`);
    }
    filter.limit = limit;
  }

  const config = loadConfig(io.env);
  if (!config.databaseUrl) throw new UsageError('DATABASE_URL is not set');
  const database = openPostgres(config.databaseUrl, {
    poolSize: 1,
    applicationName: 'qwn deliveries',
  });
  try {
    const rows = await listDeliveries(database.db, filter);
    if (values.json) {
      io.out(deliveriesJson(rows));
    } else if (rows.length === 0) {
      if (filter.subscriber && !(await subscriberKnown(database.db, filter.subscriber))) {
        io.err(
          `qwn deliveries: no subscriber has the email, webhook URL, name or id "${filter.subscriber}"`,
        );
        return 1;
      }
      io.out('No deliveries match.');
    } else {
      io.out(formatDeliveries(rows, io.timeZone));
    }
    return 0;
  } finally {
    await database.close();
  }
}
