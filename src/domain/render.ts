import { LEVEL_EN, parseLevel, type Level, type Warning, type WarningStatus } from './warning.js';

/**
 * What a subscriber receives, as plain data: the webhook body (docs/messages.md) and the email's
 * subject, text and HTML (docs/messages.md). Pure: the clock and the time zone come in with the
 * notification, so the same delivery row always renders the same message.
 */

/** Same union as detect.ts's EventType (structurally identical; either may be imported). */
export type EventType = 'new' | 'update' | 'cancel' | 'expired' | 'resumed';

/** The data attribution every message carries, in its language. */
export const ATTRIBUTION = {
  zh: '天气数据来源：和风天气 QWeather',
  en: 'Weather data: QWeather',
} as const;

export interface Notification {
  /** The ledger row id (uuid); stable across retries and redeliveries. */
  readonly deliveryId: string;
  readonly eventType: EventType;
  /** When the event was detected. */
  readonly occurredAt: Date;
  /**
   * `tz` is an IANA zone such as Asia/Shanghai, the one times are shown in: the subscriber's
   * own, else the place's.
   */
  readonly location: { readonly id: string; readonly name: string; readonly tz: string };
  readonly warning: Warning;
  /** Earlier warning ids this one updates or cancels. */
  readonly supersedes: readonly string[];
  /** Data attribution, e.g. "Weather data: QWeather". */
  readonly attribution: string;
  /** v1: the answer's `metadata.attributions`, shown after `attribution`; absent for v7. */
  readonly attributions?: readonly string[];
  readonly lang: 'zh' | 'en';
  /** A late joiner's `new`: the warning was in force when they subscribed (README, promises). */
  readonly inForceWhenSubscribed?: boolean;
  /**
   * An English subscriber's warning whose text the upstream gave only in Chinese: shown as the
   * original, marked so (src/domain/english.ts).
   */
  readonly textInChinese?: boolean;
}

/** A cancel or an end: told with when qwn saw it (`endedAt`), not only the planned end. */
export function isEnding(type: EventType): type is 'cancel' | 'expired' {
  return type === 'cancel' || type === 'expired';
}

export interface WebhookWarning {
  id: string;
  title: string;
  sender: string | null;
  pubTime: string | null;
  startTime: string | null;
  endTime: string | null;
  status: WarningStatus;
  level: Level;
  /** Capitalized as QWeather v7 and CAP spell it: Minor, Moderate, Severe, Extreme, Unknown. */
  severity: string | null;
  type: string | null;
  typeName: string | null;
  text: string;
  /** The earlier warning this one updates or cancels (v7 `related`); the full list is `supersedes`. */
  related: string | null;
  /** `zh` when an English subscriber's `text` is the original Chinese (no English published). */
  textLanguage?: 'zh';
}

/** The fields a v1 alert adds to `data.warning` (docs/v1.md); v7 bodies stay as docs/messages.md. */
export interface WebhookV1Fields {
  source: 'v1';
  /** `color.code`, lower-case: white, blue, green, yellow, orange, red, black. */
  color: string | null;
  instruction: string | null;
  /** When this alert continues a warning told from v7: the alert's own v1 id (`id` is v7's). */
  v1Id?: string;
}

export interface WebhookBody {
  type: `warning.${EventType}`;
  /** When the event was detected, ISO 8601 UTC without milliseconds. */
  timestamp: string;
  data: {
    location: { id: string; name: string };
    warning: WebhookWarning | (WebhookWarning & WebhookV1Fields);
    supersedes: string[];
    /** v1 only: the answer's `metadata.attributions`, to show with the data. */
    attributions?: string[];
    /** Cancel and expired: when qwn saw the cancel or the end (`warning.endTime` is planned). */
    endedAt?: string;
    /** A late joiner's `new`: the warning was already in force when they subscribed. */
    inForceWhenSubscribed?: true;
  };
}

export function isoSeconds(date: Date): string {
  return Number.isNaN(date.getTime()) ? String(date) : date.toISOString().replace(/\.\d{3}Z$/, 'Z');
}

function capitalize(text: string | null): string | null {
  if (!text) return text;
  return text.charAt(0).toUpperCase() + text.slice(1).toLowerCase();
}

/** The level to show: the normalized one, else the colour the upstream sent. */
export function shownLevel(warning: Warning): Level {
  if (warning.level !== 'unknown') return warning.level;
  return parseLevel(warning.color) ?? 'unknown';
}

/** The body of a webhook delivery, exactly as docs/messages.md describes it. */
export function webhookPayload(n: Notification): WebhookBody {
  const w = n.warning;
  return {
    type: `warning.${n.eventType}`,
    timestamp: isoSeconds(n.occurredAt),
    data: {
      location: { id: n.location.id, name: n.location.name },
      warning: {
        id: w.id,
        title: w.title,
        sender: w.sender,
        pubTime: w.pubTime,
        startTime: w.startTime,
        endTime: w.endTime,
        status: w.status,
        level: shownLevel(w),
        severity: capitalize(w.severity),
        type: w.typeCode,
        typeName: w.typeName,
        text: w.text,
        related: w.related[0] ?? null,
        ...(n.textInChinese ? { textLanguage: 'zh' as const } : {}),
        ...(w.source === 'v1'
          ? {
              source: 'v1' as const,
              color: w.color,
              instruction: w.instruction,
              ...(w.v1Id ? { v1Id: w.v1Id } : {}),
            }
          : {}),
      },
      supersedes: [...n.supersedes],
      ...(w.source === 'v1' ? { attributions: [...(n.attributions ?? [])] } : {}),
      ...(isEnding(n.eventType) ? { endedAt: isoSeconds(n.occurredAt) } : {}),
      ...(n.inForceWhenSubscribed ? { inForceWhenSubscribed: true as const } : {}),
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Email

export type Lang = Notification['lang'];

export { LEVEL_EN };

const SEVERITY_ZH: Record<string, string> = {
  minor: '轻微',
  moderate: '中等',
  severe: '严重',
  extreme: '特别严重',
  unknown: '未知',
};

export interface Labels {
  headline: Record<EventType, string>;
  intro: Record<EventType, string | null>;
  place: string;
  type: string;
  level: string;
  sender: string;
  pubTime: string;
  startTime: string;
  endTime: string;
  /** The upstream's end time on a cancel or an end: what was planned, not what happened. */
  plannedEnd: string;
  endedAt: Record<'cancel' | 'expired', string>;
  inForceWhenSubscribed: string;
  /** Before a text the upstream gave only in Chinese (English subscribers). */
  textInChinese: string;
  notGiven: string;
  instruction: string;
  supersedes: string;
  warningId: string;
  deliveryId: string;
  unknownLevel: string;
  colon: string;
}

export const LABELS: Record<Lang, Labels> = {
  zh: {
    headline: {
      new: '新预警',
      update: '预警更新',
      cancel: '预警解除',
      expired: '预警已结束',
      resumed: '预警恢复',
    },
    intro: {
      new: null,
      update: '此预警已由发布单位更新，内容如下。',
      cancel: '此预警已由发布单位解除。',
      expired: '此预警已到结束时间或不再发布。',
      resumed: '此前告知已结束的预警重新发布，仍然有效。',
    },
    place: '地点',
    type: '类型',
    level: '级别',
    sender: '发布单位',
    pubTime: '发布时间',
    startTime: '开始时间',
    endTime: '结束时间',
    plannedEnd: '原定结束时间',
    endedAt: { cancel: '解除时间', expired: '结束时间' },
    inForceWhenSubscribed: '您订阅时此预警已在生效中。',
    textInChinese: '',
    notGiven: '未提供',
    instruction: '防御指南',
    supersedes: '取代的预警',
    warningId: '预警编号',
    deliveryId: '通知编号',
    unknownLevel: '未知',
    colon: '：',
  },
  en: {
    headline: {
      new: 'New warning',
      update: 'Warning updated',
      cancel: 'Warning cancelled',
      expired: 'Warning ended',
      resumed: 'Warning back in force',
    },
    intro: {
      new: null,
      update: 'The issuer has updated this warning; the current text follows.',
      cancel: 'The issuer has cancelled this warning.',
      expired: 'This warning has reached its end time or is no longer published.',
      resumed: 'This warning, which we told you had ended, is published again and is in force.',
    },
    place: 'Place',
    type: 'Type',
    level: 'Level',
    sender: 'Issued by',
    pubTime: 'Published',
    startTime: 'Starts',
    endTime: 'Ends',
    plannedEnd: 'Planned end',
    endedAt: { cancel: 'Cancelled at', expired: 'Ended at' },
    inForceWhenSubscribed: 'This warning was already in force when you subscribed.',
    textInChinese: 'Original text, in Chinese (the issuer published no English):',
    notGiven: 'not given',
    instruction: 'Instruction',
    supersedes: 'Replaces',
    warningId: 'Warning id',
    deliveryId: 'Notification id',
    unknownLevel: 'Unknown',
    colon: ': ',
  },
};

const formatters = new Map<string, Intl.DateTimeFormat>();

function formatterFor(timeZone: string): Intl.DateTimeFormat {
  let formatter = formatters.get(timeZone);
  if (!formatter) {
    try {
      formatter = new Intl.DateTimeFormat('en-US', {
        timeZone,
        year: 'numeric',
        month: '2-digit',
        day: '2-digit',
        hour: '2-digit',
        minute: '2-digit',
        hourCycle: 'h23',
        timeZoneName: 'shortOffset',
      });
    } catch {
      // An unknown zone must not cost the subscriber the message; UTC is at least unambiguous.
      formatter = formatterFor('UTC');
    }
    formatters.set(timeZone, formatter);
  }
  return formatter;
}

/**
 * Times already formatted, by zone and upstream text. A storm renders the same few warning times
 * for thousands of subscribers, and `formatToParts` was a visible part of its profile.
 */
const formattedTimes = new Map<string, string>();
const MAX_FORMATTED_TIMES = 5000;

/** `2026-07-01 16:00 (GMT+8)` in the place's zone; unparseable upstream text is shown as given. */
export function formatTime(iso: string | null, timeZone: string, lang: Lang): string {
  if (!iso) return LABELS[lang].notGiven;
  const key = `${timeZone} ${iso}`;
  let formatted = formattedTimes.get(key);
  if (formatted === undefined) {
    formatted = formatInZone(iso, timeZone);
    if (formattedTimes.size >= MAX_FORMATTED_TIMES) formattedTimes.clear();
    formattedTimes.set(key, formatted);
  }
  return formatted;
}

function formatInZone(iso: string, timeZone: string): string {
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return iso;
  const parts: Record<string, string> = {};
  for (const part of formatterFor(timeZone).formatToParts(date)) parts[part.type] = part.value;
  // ICU spells a zero offset "GMT" or "GMT+0" depending on the version; UTC says it plainly.
  const zone = /^GMT(\+0)?$/.test(parts.timeZoneName ?? '') ? 'UTC' : parts.timeZoneName;
  return `${parts.year}-${parts.month}-${parts.day} ${parts.hour}:${parts.minute} (${zone})`;
}

export function levelText(level: Level, lang: Lang): string {
  if (level === 'unknown') return LABELS[lang].unknownLevel;
  return lang === 'zh' ? level : LEVEL_EN[level];
}

function severityText(severity: string | null, lang: Lang): string | null {
  if (!severity) return null;
  const key = severity.toLowerCase();
  return lang === 'zh' ? (SEVERITY_ZH[key] ?? severity) : (capitalize(severity) ?? severity);
}

/** Header lines must stay one line: a CR/LF from upstream text would start a new header. */
export function oneLine(text: string): string {
  // eslint-disable-next-line no-control-regex
  return text.replace(/[\u0000-\u001f\u007f\u2028\u2029]+/g, ' ').trim();
}

export function renderSubject(n: Notification): string {
  const w = n.warning;
  const level = shownLevel(w);
  const title = oneLine(w.title) || oneLine(w.typeName ?? '') || w.id;
  const place = oneLine(n.location.name);
  if (n.lang === 'zh') {
    const levelTag = level === 'unknown' ? '预警' : `${level}预警`;
    const marker = {
      new: `【${levelTag}】`,
      update: `【更新·${levelTag}】`,
      cancel: '【解除】',
      expired: '【已结束】',
      resumed: `【预警恢复·${levelTag}】`,
    }[n.eventType];
    return `${marker}${title}${place ? `（${place}）` : ''}`;
  }
  const levelTag = level === 'unknown' ? 'Warning' : `${LEVEL_EN[level]} warning`;
  const marker = {
    new: `[${levelTag}] `,
    update: `Updated: [${levelTag}] `,
    cancel: 'Cancelled: ',
    expired: 'Ended: ',
    resumed: `Back in force: [${levelTag}] `,
  }[n.eventType];
  return `${marker}${title}${place ? ` (${place})` : ''}`;
}

export interface Field {
  label: string;
  value: string;
}

export interface EmailContent {
  subject: string;
  headline: string;
  intro: string | null;
  fields: Field[];
  /** Says what language `text` is in when that is not the subscriber's. */
  textNote: string | null;
  text: string;
  instruction: string | null;
  footer: string[];
}

/** The facts of one notification's email, before layout (message-render.ts lays out several). */
export function emailContent(n: Notification): EmailContent {
  const w = n.warning;
  const l = LABELS[n.lang];
  const tz = n.location.tz;
  const severity = severityText(w.severity, n.lang);
  const shown = shownLevel(w);
  // A colour off the level scale (v1 may send green or black) is still worth showing as given.
  const level = shown === 'unknown' && w.color ? w.color : levelText(shown, n.lang);
  const fields: Field[] = [
    { label: l.place, value: `${n.location.name} (${n.location.id})` },
    { label: l.type, value: w.typeName ?? w.typeCode ?? l.notGiven },
    { label: l.level, value: severity ? `${level} (${severity})` : level },
    { label: l.sender, value: w.sender ?? l.notGiven },
    { label: l.pubTime, value: formatTime(w.pubTime, tz, n.lang) },
    { label: l.startTime, value: formatTime(w.startTime, tz, n.lang) },
    ...(isEnding(n.eventType)
      ? [
          {
            label: l.endedAt[n.eventType],
            value: formatTime(n.occurredAt.toISOString(), tz, n.lang),
          },
          { label: l.plannedEnd, value: formatTime(w.endTime, tz, n.lang) },
        ]
      : [{ label: l.endTime, value: formatTime(w.endTime, tz, n.lang) }]),
  ];
  if (n.supersedes.length > 0) fields.push({ label: l.supersedes, value: n.supersedes.join(', ') });
  fields.push({ label: l.warningId, value: w.id });
  return {
    subject: renderSubject(n),
    headline: `${l.headline[n.eventType]}${l.colon}${w.title}`,
    intro: n.inForceWhenSubscribed ? l.inForceWhenSubscribed : l.intro[n.eventType],
    fields,
    textNote: n.textInChinese ? l.textInChinese : null,
    text: w.text,
    instruction: w.instruction?.trim() ? w.instruction : null,
    footer: [
      n.attribution,
      ...(n.attributions ?? []).map((a) => oneLine(a)),
      `${l.deliveryId}${l.colon}${n.deliveryId}`,
    ].filter((s) => s !== ''),
  };
}

export function escapeHtml(text: string): string {
  return text
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&#39;');
}

function renderText(c: EmailContent, lang: Lang): string {
  const l = LABELS[lang];
  const lines = [c.headline];
  if (c.intro) lines.push(c.intro);
  lines.push('', ...c.fields.map((f) => `${f.label}${l.colon}${f.value}`), '');
  if (c.textNote) lines.push(c.textNote);
  lines.push(c.text);
  if (c.instruction) lines.push('', `${l.instruction}${l.colon}`, c.instruction);
  lines.push('', '--', ...c.footer);
  return lines.join('\n') + '\n';
}

function renderHtml(c: EmailContent, lang: Lang): string {
  const l = LABELS[lang];
  const e = escapeHtml;
  const rows = c.fields
    .map(
      (f) =>
        `<tr><th align="left" style="padding:2px 12px 2px 0;vertical-align:top">${e(f.label)}</th>` +
        `<td style="padding:2px 0">${e(f.value)}</td></tr>`,
    )
    .join('\n');
  const parts = [
    '<!doctype html>',
    `<html lang="${lang === 'zh' ? 'zh-CN' : 'en'}">`,
    '<head><meta charset="utf-8"><meta name="viewport" content="width=device-width">',
    `<title>${e(c.subject)}</title></head>`,
    '<body style="font-family:sans-serif;line-height:1.5">',
    `<h2>${e(c.headline)}</h2>`,
  ];
  if (c.intro) parts.push(`<p><strong>${e(c.intro)}</strong></p>`);
  parts.push(`<table role="presentation">\n${rows}\n</table>`);
  if (c.textNote) parts.push(`<p><em>${e(c.textNote)}</em></p>`);
  parts.push(`<p style="white-space:pre-wrap">${e(c.text)}</p>`);
  if (c.instruction) {
    parts.push(
      `<h3>${e(l.instruction)}</h3>`,
      `<p style="white-space:pre-wrap">${e(c.instruction)}</p>`,
    );
  }
  parts.push(
    '<hr>',
    ...c.footer.map((line) => `<p style="color:#666;font-size:small">${e(line)}</p>`),
    '</body></html>',
  );
  return parts.join('\n') + '\n';
}

/** One email per notification: subject, a plain-text part and an HTML part (all text escaped). */
export function renderEmail(n: Notification): { subject: string; text: string; html: string } {
  const c = emailContent(n);
  return { subject: c.subject, text: renderText(c, n.lang), html: renderHtml(c, n.lang) };
}
