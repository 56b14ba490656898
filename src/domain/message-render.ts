import { CHANGE_EVENT, chainInForce, collapseChains, type WarningChain } from './chains.js';
import {
  LABELS,
  LEVEL_EN,
  emailContent,
  escapeHtml,
  formatTime,
  isoSeconds,
  levelText,
  oneLine,
  renderEmail,
  renderSubject,
  shownLevel,
  webhookPayload,
  type EventType,
  type Lang,
  type Notification,
  type WebhookBody,
} from './render.js';
import type { Hold } from './schedule.js';

/**
 * What a message looks like (docs/messages.md): a message of one notification is exactly the §4
 * webhook body or the §5 email; a message of several is a `warning.batch` webhook or one email
 * with a section per warning chain. Pure, like render.ts: the same message renders the same bytes
 * on every retry.
 */

export interface Message {
  /** The webhook-id / Message-ID. */
  id: string;
  hold: Hold | null;
  /** All of one subscriber, in one language; at least one. */
  notifications: readonly Notification[];
  /** For hold 'quiet': the subscriber's quiet hours, named in the heading (local "HH:MM"). */
  quietHours?: { from: string; to: string };
  /**
   * Two messages with the same key have the same webhook body (which holds neither the message
   * id nor the reader's time zone), so a sender may render it once for all their subscribers;
   * absent when the body is the message's own.
   */
  webhookBodyKey?: string;
}

/** A message with no notification cannot be rendered: the pipeline must never create one. */
export class EmptyMessageError extends Error {
  constructor(id: string) {
    super(`message ${id} carries no notification`);
    this.name = 'EmptyMessageError';
  }
}

function notificationsOf(m: Message): readonly [Notification, ...Notification[]] {
  const [first, ...rest] = m.notifications;
  if (!first) throw new EmptyMessageError(m.id);
  return [first, ...rest];
}

// ---------------------------------------------------------------------------------------------
// Webhook

export type WebhookBatchItem = { type: WebhookBody['type'] } & WebhookBody['data'];

export interface WebhookBatchBody {
  type: 'warning.batch';
  /** When the newest of its events was detected, ISO 8601 UTC without milliseconds. */
  timestamp: string;
  data: { notifications: WebhookBatchItem[] };
}

/**
 * One notification: exactly `webhookPayload(n)`. Several: a batch of every notification, oldest
 * first and not collapsed into chains — a machine applies them in order and reaches the same
 * state as if they had come one by one.
 */
export function renderWebhookMessage(m: Message): WebhookBody | WebhookBatchBody {
  const all = notificationsOf(m);
  if (all.length === 1) return webhookPayload(all[0]);
  const ordered = [...all]
    .map((n, index) => ({ n, index }))
    .sort((a, b) => a.n.occurredAt.getTime() - b.n.occurredAt.getTime() || a.index - b.index)
    .map(({ n }) => n);
  const newest = ordered[ordered.length - 1]!;
  return {
    type: 'warning.batch',
    timestamp: isoSeconds(newest.occurredAt),
    data: {
      notifications: ordered.map((n) => {
        const body = webhookPayload(n);
        return { type: body.type, ...body.data };
      }),
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Email

export interface EmailMessage {
  subject: string;
  text: string;
  html: string;
}

export interface EmailOptions {
  /** The subscriber's one-click unsubscribe URL (docs/subscribers.md); shown in both parts when given. */
  unsubscribeUrl?: string;
}

interface BatchLabels {
  count: (k: number) => string;
  subjectMore: (k: number) => string;
  subjectEnded: string;
  subjectCancelled: string;
  subjectCancelledOrEnded: string;
  levelTag: (level: string | null) => string;
  awayHeading: (window: string | null) => string;
  awayIntro: string;
  batchIntro: string;
  beganAndEnded: Record<'cancel' | 'expired', string>;
  history: string;
  messageId: string;
  notificationIds: string;
  unsubscribe: string;
  listSeparator: string;
}

const BATCH_LABELS: Record<Lang, BatchLabels> = {
  zh: {
    count: (k) => `${k} 条预警`,
    subjectMore: () => '等',
    subjectEnded: '【已结束】',
    subjectCancelled: '【已解除】',
    subjectCancelledOrEnded: '【已解除或结束】',
    levelTag: (level) => `【${level ? `${level}预警` : '预警'}】`,
    awayHeading: (window) => (window ? `免打扰时段（${window}）内的预警` : '免打扰时段内的预警'),
    awayIntro: '以下预警在您的免打扰时段内发布，现一并发送；每条预警只列出其最新状态。',
    batchIntro: '每条预警只列出其最新状态，级别高的在前。',
    beganAndEnded: {
      cancel: '此预警发布后已由发布单位解除。',
      expired: '此预警发布后已到结束时间或不再发布。',
    },
    history: '经过',
    messageId: '消息编号',
    notificationIds: '通知编号',
    unsubscribe: '退订',
    listSeparator: '，',
  },
  en: {
    count: (k) => `${k} warnings`,
    subjectMore: (k) => ` and ${k} more`,
    subjectEnded: 'Ended: ',
    subjectCancelled: 'Cancelled: ',
    subjectCancelledOrEnded: 'Cancelled or ended: ',
    levelTag: (level) => `[${level ? `${level} warning` : 'Warning'}] `,
    awayHeading: (window) =>
      window ? `While you were away (quiet hours ${window})` : 'While you were away',
    awayIntro:
      'These warnings came in during your quiet hours and were held until now; each is shown in its latest state.',
    batchIntro: 'Each warning is shown in its latest state, highest level first.',
    beganAndEnded: {
      cancel: 'This warning was issued and has since been cancelled by the issuer.',
      expired: 'This warning was issued and has since ended.',
    },
    history: 'History',
    messageId: 'Message id',
    notificationIds: 'Notification ids',
    unsubscribe: 'Unsubscribe',
    listSeparator: ', ',
  },
};

function subjectTitle(n: Notification): string {
  const w = n.warning;
  const title = oneLine(w.title) || oneLine(w.typeName ?? '') || w.id;
  const place = oneLine(n.location.name);
  if (!place) return title;
  return n.lang === 'zh' ? `${title}（${place}）` : `${title} (${place})`;
}

/**
 * Several chains: the count and the highest level still in force, then the top chain's title. A
 * batch in which every warning is over says so instead of a level: a red tag on an email that only
 * reports a red warning's cancellation would alarm for nothing.
 */
function batchSubject(chains: readonly WarningChain[], lang: Lang): string {
  const b = BATCH_LABELS[lang];
  const inForce = chains.find(chainInForce);
  const top = inForce ?? chains[0]!;
  let tag: string;
  // Over, in the words of the sections' headings: cancelled, ended, or both kinds.
  if (!inForce) {
    const cancelled = chains.filter((c) => c.change === 'cancelled').length;
    tag =
      cancelled === 0
        ? b.subjectEnded
        : cancelled === chains.length
          ? b.subjectCancelled
          : b.subjectCancelledOrEnded;
  } else if (inForce.level === 'unknown') tag = b.levelTag(null);
  else tag = b.levelTag(lang === 'zh' ? inForce.level : LEVEL_EN[inForce.level]);
  return `${tag}${b.count(chains.length)}${LABELS[lang].colon}${subjectTitle(top.latest)}${b.subjectMore(chains.length - 1)}`;
}

interface Section {
  headline: string;
  intro: string | null;
  fields: Array<{ label: string; value: string }>;
  history: string[];
  text: string;
  instruction: string | null;
}

function section(chain: WarningChain, lang: Lang): Section {
  const l = LABELS[lang];
  const b = BATCH_LABELS[lang];
  const latest = chain.latest;
  const c = emailContent(latest);
  const event: EventType = CHANGE_EVENT[chain.change];
  const endedEvent = latest.eventType === 'cancel' ? 'cancel' : 'expired';
  const intro =
    chain.began && chain.change === 'ended' ? b.beganAndEnded[endedEvent] : l.intro[event];
  // The steps, so that a chain shown once still says what happened and names every warning id.
  const history =
    chain.notifications.length > 1
      ? chain.notifications.map((n) => {
          const when = formatTime(n.occurredAt.toISOString(), n.location.tz, lang);
          const level = levelText(shownLevel(n.warning), lang);
          return lang === 'zh'
            ? `${when} ${l.headline[n.eventType]}${b.listSeparator}${level}（${n.warning.id}）`
            : `${when} ${l.headline[n.eventType]}${b.listSeparator}${level} (${n.warning.id})`;
        })
      : [];
  return {
    headline: `${l.headline[event]}${l.colon}${latest.warning.title}`,
    intro,
    fields: c.fields,
    history,
    text: c.textNote ? `${c.textNote}\n${c.text}` : c.text,
    instruction: c.instruction,
  };
}

function footerOf(m: Message, all: readonly Notification[], lang: Lang): string[] {
  const attributions = new Set<string>();
  for (const n of all) {
    for (const line of [n.attribution, ...(n.attributions ?? []).map((a) => oneLine(a))]) {
      if (line !== '') attributions.add(line);
    }
  }
  const notificationIds = all.map((n) => n.deliveryId).join(', ');
  const l = LABELS[lang];
  return [
    ...attributions,
    `${BATCH_LABELS[lang].messageId}${l.colon}${m.id}`,
    `${BATCH_LABELS[lang].notificationIds}${l.colon}${notificationIds}`,
  ];
}

function quietWindowText(m: Message): string | null {
  return m.quietHours ? `${oneLine(m.quietHours.from)}–${oneLine(m.quietHours.to)}` : null;
}

function batchText(
  m: Message,
  chains: readonly WarningChain[],
  all: readonly Notification[],
  lang: Lang,
  unsubscribeUrl: string | undefined,
): string {
  const l = LABELS[lang];
  const b = BATCH_LABELS[lang];
  const lines: string[] = [];
  if (m.hold === 'quiet') lines.push(b.awayHeading(quietWindowText(m)), b.awayIntro);
  else lines.push(b.count(chains.length), b.batchIntro);
  chains.forEach((chain, i) => {
    const s = section(chain, lang);
    lines.push('', `== ${i + 1}. ${s.headline} ==`);
    if (s.intro) lines.push(s.intro);
    lines.push('', ...s.fields.map((f) => `${f.label}${l.colon}${f.value}`));
    if (s.history.length > 0) {
      lines.push(`${b.history}${l.colon.trimEnd()}`, ...s.history.map((h) => `- ${h}`));
    }
    lines.push('', s.text);
    if (s.instruction) lines.push('', `${l.instruction}${l.colon}`, s.instruction);
  });
  lines.push('', '--', ...footerOf(m, all, lang));
  if (unsubscribeUrl !== undefined) lines.push(unsubscribeLine(unsubscribeUrl, lang));
  return lines.join('\n') + '\n';
}

function batchHtml(
  m: Message,
  subject: string,
  chains: readonly WarningChain[],
  all: readonly Notification[],
  lang: Lang,
  unsubscribeUrl: string | undefined,
): string {
  const l = LABELS[lang];
  const b = BATCH_LABELS[lang];
  const e = escapeHtml;
  const parts = [
    '<!doctype html>',
    `<html lang="${lang === 'zh' ? 'zh-CN' : 'en'}">`,
    '<head><meta charset="utf-8"><meta name="viewport" content="width=device-width">',
    `<title>${e(subject)}</title></head>`,
    '<body style="font-family:sans-serif;line-height:1.5">',
  ];
  if (m.hold === 'quiet') {
    parts.push(`<h1>${e(b.awayHeading(quietWindowText(m)))}</h1>`, `<p>${e(b.awayIntro)}</p>`);
  } else {
    parts.push(`<h1>${e(b.count(chains.length))}</h1>`, `<p>${e(b.batchIntro)}</p>`);
  }
  for (const chain of chains) {
    const s = section(chain, lang);
    const rows = s.fields
      .map(
        (f) =>
          `<tr><th align="left" style="padding:2px 12px 2px 0;vertical-align:top">${e(f.label)}</th>` +
          `<td style="padding:2px 0">${e(f.value)}</td></tr>`,
      )
      .join('\n');
    parts.push('<hr>', `<h2>${e(s.headline)}</h2>`);
    if (s.intro) parts.push(`<p><strong>${e(s.intro)}</strong></p>`);
    parts.push(`<table role="presentation">\n${rows}\n</table>`);
    if (s.history.length > 0) {
      parts.push(
        `<h3>${e(b.history)}</h3>`,
        `<ul>\n${s.history.map((h) => `<li>${e(h)}</li>`).join('\n')}\n</ul>`,
      );
    }
    parts.push(`<p style="white-space:pre-wrap">${e(s.text)}</p>`);
    if (s.instruction) {
      parts.push(
        `<h3>${e(l.instruction)}</h3>`,
        `<p style="white-space:pre-wrap">${e(s.instruction)}</p>`,
      );
    }
  }
  parts.push(
    '<hr>',
    ...footerOf(m, all, lang).map((line) => `<p style="color:#666;font-size:small">${e(line)}</p>`),
  );
  if (unsubscribeUrl !== undefined) parts.push(unsubscribeHtml(unsubscribeUrl, lang));
  parts.push('</body></html>');
  return parts.join('\n') + '\n';
}

function unsubscribeLine(url: string, lang: Lang): string {
  return `${BATCH_LABELS[lang].unsubscribe}${LABELS[lang].colon}${oneLine(url)}`;
}

function unsubscribeHtml(url: string, lang: Lang): string {
  const e = escapeHtml;
  return `<p style="color:#666;font-size:small"><a href="${e(oneLine(url))}">${e(BATCH_LABELS[lang].unsubscribe)}</a></p>`;
}

const HTML_END = '</body></html>\n';

/**
 * One notification: exactly `renderEmail(n)`, with the unsubscribe line appended to each part when
 * a URL is given. Several: a subject naming the count and the highest level in force, and one
 * section per chain, highest level first; a quiet-hours message opens with "while you were away".
 */
export function renderEmailMessage(m: Message, opts: EmailOptions = {}): EmailMessage {
  const all = notificationsOf(m);
  const lang = all[0].lang;
  const url = opts.unsubscribeUrl;
  if (all.length === 1) {
    const single = renderEmail(all[0]);
    if (url === undefined) return single;
    return {
      subject: single.subject,
      text: `${single.text}${unsubscribeLine(url, lang)}\n`,
      html: single.html.endsWith(HTML_END)
        ? `${single.html.slice(0, -HTML_END.length)}${unsubscribeHtml(url, lang)}\n${HTML_END}`
        : `${single.html}${unsubscribeHtml(url, lang)}\n`,
    };
  }
  const chains = collapseChains(all);
  const subject =
    chains.length === 1
      ? renderSubject({ ...chains[0]!.latest, eventType: CHANGE_EVENT[chains[0]!.change] })
      : batchSubject(chains, lang);
  return {
    subject,
    text: batchText(m, chains, all, lang, url),
    html: batchHtml(m, subject, chains, all, lang, url),
  };
}
