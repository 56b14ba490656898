import { EVENT_ORDER } from './chains.js';
import { formatTime, type Notification } from './render.js';
import { levelRank, parseLevel, type Level, type Warning } from './warning.js';

/**
 * What a chat robot posts (docs/messages.md): one message carrying one or more notifications of one
 * subscriber, as the vendor's JSON body. Pure: the same notifications and message id always give
 * the same body. Signing fields (Feishu `timestamp`/`sign`) are added by the sender.
 *
 * Every body fits the vendor's size limit. What does not fit is shortened where it can be cut
 * safely: a warning's text loses its tail (never half a character, never half a link), and when
 * even short texts do not fit, the lowest warnings of a grouped message are left out. Either is
 * said in the message. Upstream text is escaped after cutting, so no markdown construct of ours
 * is ever cut and no upstream text can open one.
 */

export type RobotVendor = 'wecom' | 'dingtalk' | 'feishu';
export const ROBOT_VENDORS: readonly RobotVendor[] = ['wecom', 'dingtalk', 'feishu'];

/**
 * Size limits, in UTF-8 bytes. WeCom: `markdown.content` at most 4096 bytes (documented).
 * Feishu: the whole request body at most 20 KB (documented); the sender adds `timestamp` and
 * `sign` (under 80 bytes), so the rendered body keeps 256 bytes free for them. DingTalk documents
 * no markdown limit: 12,000 bytes (about 4,000 Chinese characters) is our own bound, well under
 * the 20 KB its gateway is reported to take, and already more than a chat reader scrolls.
 */
export const ROBOT_LIMITS = {
  wecomContentBytes: 4096,
  dingtalkTextBytes: 12_000,
  /** The chat list and phone notification show the title; longer ones are cut there anyway. */
  dingtalkTitleChars: 64,
  feishuBodyBytes: 20 * 1024 - 256,
} as const;

export interface WecomBody {
  msgtype: 'markdown';
  markdown: { content: string };
}

export interface DingtalkBody {
  msgtype: 'markdown';
  markdown: { title: string; text: string };
  at: { atMobiles: string[]; atUserIds: string[]; isAtAll: false };
  /** Idempotency key: a retry with the same value is not posted twice. */
  msgUuid: string;
}

export type FeishuTemplate = 'red' | 'orange' | 'yellow' | 'blue' | 'grey' | 'green';

export type FeishuElement =
  | { tag: 'markdown'; content: string }
  | { tag: 'hr' }
  | { tag: 'note'; elements: { tag: 'plain_text'; content: string }[] };

export interface FeishuBody {
  msg_type: 'interactive';
  card: {
    config: { wide_screen_mode: true };
    header: { template: FeishuTemplate; title: { tag: 'plain_text'; content: string } };
    elements: FeishuElement[];
  };
}

export type RobotBody = WecomBody | DingtalkBody | FeishuBody;

type Lang = Notification['lang'];

// ---------------------------------------------------------------------------------------------
// Chains: a warning and the updates, cancellations and expiry that follow it, shown once.

export interface RobotChain {
  /** The chain's notifications, earliest first; the last one is the state shown. */
  readonly steps: readonly Notification[];
}

function shownLevel(w: Warning): Level {
  if (w.level !== 'unknown') return w.level;
  return parseLevel(w.color) ?? 'unknown';
}

function isEnded(n: Notification): boolean {
  return n.eventType === 'cancel' || n.eventType === 'expired';
}

/**
 * Groups notifications into chains (linked by warning id, `supersedes` and the warning's
 * `related`), each ordered earliest first, and orders the chains highest level first (then
 * ongoing before ended, then by time, then by warning id, so the order never depends on input
 * order).
 */
export function robotChains(notifications: readonly Notification[]): RobotChain[] {
  const parent = new Map<string, string>();
  const find = (id: string): string => {
    let root = id;
    while (parent.has(root) && parent.get(root) !== root) root = parent.get(root)!;
    parent.set(id, root);
    return root;
  };
  const union = (a: string, b: string) => {
    const ra = find(a);
    const rb = find(b);
    if (ra !== rb) parent.set(ra < rb ? rb : ra, ra < rb ? ra : rb);
  };
  const linksOf = (n: Notification) => [...n.supersedes, ...n.warning.related];
  for (const n of notifications) {
    find(n.warning.id);
    for (const earlier of linksOf(n)) union(n.warning.id, earlier);
  }

  const groups = new Map<string, Notification[]>();
  for (const n of notifications) {
    const root = find(n.warning.id);
    const group = groups.get(root);
    if (group) group.push(n);
    else groups.set(root, [n]);
  }

  const chains = [...groups.values()].map((members) => {
    // Depth: how many warnings of the chain this one follows (cycles in bad data stop the walk).
    const byId = new Map<string, Notification[]>();
    for (const m of members) byId.set(m.warning.id, [...(byId.get(m.warning.id) ?? []), m]);
    const depthOf = new Map<string, number>();
    const depth = (id: string, seen: Set<string>): number => {
      const known = depthOf.get(id);
      if (known !== undefined) return known;
      let d = 0;
      for (const m of byId.get(id) ?? []) {
        for (const earlier of linksOf(m)) {
          if (earlier === id || seen.has(earlier) || !byId.has(earlier)) continue;
          d = Math.max(d, 1 + depth(earlier, new Set([...seen, id])));
        }
      }
      depthOf.set(id, d);
      return d;
    };
    // Computed in id order up front: with a cycle the depths depend on where the walk starts.
    const depths = new Map([...byId.keys()].sort().map((id) => [id, depth(id, new Set())]));
    const steps = [...members].sort(
      (a, b) =>
        depths.get(a.warning.id)! - depths.get(b.warning.id)! ||
        EVENT_ORDER[a.eventType] - EVENT_ORDER[b.eventType] ||
        a.occurredAt.getTime() - b.occurredAt.getTime() ||
        (a.eventType < b.eventType ? -1 : a.eventType > b.eventType ? 1 : 0),
    );
    return { steps };
  });

  const latest = (c: RobotChain) => c.steps[c.steps.length - 1]!;
  return chains.sort((a, b) => {
    const la = latest(a);
    const lb = latest(b);
    return (
      levelRank(shownLevel(lb.warning)) - levelRank(shownLevel(la.warning)) ||
      Number(isEnded(la)) - Number(isEnded(lb)) ||
      la.occurredAt.getTime() - lb.occurredAt.getTime() ||
      (la.warning.id < lb.warning.id ? -1 : la.warning.id > lb.warning.id ? 1 : 0)
    );
  });
}

// ---------------------------------------------------------------------------------------------
// Safe cutting

const graphemes = new Intl.Segmenter(undefined, { granularity: 'grapheme' });

/**
 * The last grapheme boundary at or before `offset`. Only a short stretch around the offset is
 * segmented: segmenting a whole 10,000-character text costs tens of milliseconds, and a cluster
 * (an emoji family, a flag, a letter with marks) is far shorter than the stretch.
 */
function graphemeStart(text: string, offset: number): number {
  if (offset <= 0) return 0;
  if (offset >= text.length) return text.length;
  const from = Math.max(0, offset - 32);
  let best = from;
  for (const s of graphemes.segment(text.slice(from, offset + 32))) {
    const boundary = from + s.index;
    if (boundary > offset) break;
    best = boundary;
  }
  // A cluster longer than the stretch (pathological marks): at least never split a pair.
  const unit = text.charCodeAt(best);
  return unit >= 0xdc00 && unit <= 0xdfff ? best - 1 : best;
}

const URL_PATTERN = /(?:https?:\/\/|www\.)[^\s<>"'，。；、）)\]】]+/gi;

/** Where a cut at `offset` lands once it is moved out of any link it would split. */
function outsideLinks(text: string, offset: number): number {
  for (const match of text.matchAll(URL_PATTERN)) {
    const start = match.index;
    const end = start + match[0].length;
    if (start < offset && offset < end) return start;
    if (start >= offset) break;
  }
  return offset;
}

/** At most about `max` UTF-16 units of the text, cut between graphemes and outside links. */
function cutText(text: string, max: number): { text: string; shortened: boolean } {
  if (text.length <= max) return { text, shortened: false };
  const offset = outsideLinks(text, graphemeStart(text, Math.max(0, max)));
  return { text: text.slice(0, offset).trimEnd(), shortened: true };
}

/** Short fields (titles, names) are clipped hard: one of them alone must never fill a message. */
function clip(text: string, max: number): string {
  if (text.length <= max) return text;
  return `${text.slice(0, graphemeStart(text, max - 1))}…`;
}

/** Header-ish values must stay on one line: a line break would end a quote or a list item. */
function oneLine(text: string): string {
  // eslint-disable-next-line no-control-regex
  return text.replace(/[\u0000-\u001f\u007f\u2028\u2029]+/g, ' ').trim();
}

const FIELD_MAX = 120;

// ---------------------------------------------------------------------------------------------
// Wording

const LEVEL_EN: Record<Exclude<Level, 'unknown'>, string> = {
  白色: 'White',
  蓝色: 'Blue',
  黄色: 'Yellow',
  橙色: 'Orange',
  红色: 'Red',
};

const SEVERITY_ZH: Record<string, string> = {
  minor: '轻微',
  moderate: '中等',
  severe: '严重',
  extreme: '特别严重',
  unknown: '未知',
};

const WORDS = {
  zh: {
    event: {
      new: '新预警',
      update: '预警更新',
      cancel: '预警解除',
      expired: '预警已结束',
      resumed: '预警恢复',
    },
    place: '地点',
    type: '类型',
    level: '级别',
    issued: '发布',
    inForce: '起止',
    planned: '原定起止',
    endedAt: { cancel: '解除时间', expired: '结束时间' },
    inForceWhenSubscribed: '您订阅时此预警已在生效中。',
    textInChinese: '',
    to: '至',
    notGiven: '未提供',
    changed: '变化',
    instruction: '防御指南',
    messageId: '消息编号',
    /** An ideographic space, as Chinese text separates fields. */
    sep: '\u3000',
    colon: '：',
    shortened: '（正文过长，已截断）',
    omitted: (k: number) => `另有 ${k} 条预警未列出（超出消息长度限制）`,
  },
  en: {
    event: {
      new: 'New warning',
      update: 'Warning updated',
      cancel: 'Warning cancelled',
      expired: 'Warning ended',
      resumed: 'Warning back in force',
    },
    place: 'Place',
    type: 'Type',
    level: 'Level',
    issued: 'Issued',
    inForce: 'In force',
    planned: 'Planned',
    endedAt: { cancel: 'Cancelled at', expired: 'Ended at' },
    inForceWhenSubscribed: 'This warning was already in force when you subscribed.',
    textInChinese: 'Original text, in Chinese (the issuer published no English):',
    to: 'to',
    notGiven: 'not given',
    changed: 'Changes',
    instruction: 'Instruction',
    messageId: 'Message id',
    sep: ' · ',
    colon: ': ',
    shortened: ' (text too long, shortened)',
    omitted: (k: number) =>
      `${k} more warning${k === 1 ? '' : 's'} not listed (message size limit)`,
  },
} as const;

function levelName(level: Level, lang: Lang): string | null {
  if (level === 'unknown') return null;
  return lang === 'zh' ? level : LEVEL_EN[level];
}

/** The level as shown in a field: a colour off the scale (v1 green, black) is shown as given. */
function levelField(w: Warning, lang: Lang): string {
  const shown = shownLevel(w);
  const name = levelName(shown, lang) ?? w.color ?? WORDS[lang].notGiven;
  if (!w.severity) return name;
  const key = w.severity.toLowerCase();
  const severity =
    lang === 'zh' ? (SEVERITY_ZH[key] ?? w.severity) : key.charAt(0).toUpperCase() + key.slice(1);
  return lang === 'zh' ? `${name}（${severity}）` : `${name} (${severity})`;
}

/** `【橙色预警】`, `【更新·橙色预警】`, `【解除】`… — the same markers as the email subject. */
function eventTag(n: Notification): string {
  const name = levelName(shownLevel(n.warning), n.lang);
  if (n.lang === 'zh') {
    const levelTag = name ? `${name}预警` : '预警';
    return {
      new: `【${levelTag}】`,
      update: `【更新·${levelTag}】`,
      cancel: '【解除】',
      expired: '【已结束】',
      resumed: `【预警恢复·${levelTag}】`,
    }[n.eventType];
  }
  const levelTag = name ? `${name} warning` : 'Warning';
  return {
    new: `[${levelTag}]`,
    update: `[Updated: ${levelTag}]`,
    cancel: '[Cancelled]',
    expired: '[Ended]',
    resumed: `[Back in force: ${levelTag}]`,
  }[n.eventType];
}

function titleOf(n: Notification): string {
  const w = n.warning;
  return clip(oneLine(w.title) || oneLine(w.typeName ?? '') || w.id, FIELD_MAX);
}

function placeOf(n: Notification): string {
  return clip(oneLine(n.location.name), FIELD_MAX) || n.location.id;
}

/** The message's one-line headline: the chat list, the phone notification, the card header. */
function headline(
  chains: readonly RobotChain[],
  lang: Lang,
  escape: (upstream: string) => string = (t) => t,
): string {
  const latest = chains.map((c) => c.steps[c.steps.length - 1]!);
  const first = latest[0]!;
  if (latest.length === 1) {
    const place = placeOf(first);
    return lang === 'zh'
      ? `${eventTag(first)}${escape(titleOf(first))}（${escape(place)}）`
      : `${eventTag(first)} ${escape(titleOf(first))} (${escape(place)})`;
  }
  const count = latest.length;
  const what = escape(clip(oneLine(first.warning.typeName ?? '') || titleOf(first), 20));
  const place = escape(clip(placeOf(first), 20));
  if (latest.every(isEnded)) {
    return lang === 'zh'
      ? `【解除】${count} 条预警已解除或结束：${what}（${place}）等`
      : `[Ended] ${count} warnings cancelled or ended: ${what} (${place}) and more`;
  }
  // The level that leads the headline is the highest one still in force.
  const top = latest.find((n) => !isEnded(n)) ?? first;
  const name = levelName(shownLevel(top.warning), lang);
  return lang === 'zh'
    ? `【${name ? `${name}预警` : '预警'}】${count} 条预警：${what}（${place}）等`
    : `[${name ? `${name} warning` : 'Warning'}] ${count} warnings: ${what} (${place}) and more`;
}

// ---------------------------------------------------------------------------------------------
// One chain as plain facts; each vendor turns them into its markdown.

interface ChainFacts {
  latest: Notification;
  tag: string;
  title: string;
  /** `地点：杭州 类型：暴雨 级别：橙色（严重）` (ideographic spaces) — plain text, one line each. */
  lines: string[];
  /** What changed within the chain, when it holds more than one step. */
  changed: string | null;
  text: string;
}

function chainFacts(chain: RobotChain, lang: Lang): ChainFacts {
  const w0 = WORDS[lang];
  const first = chain.steps[0]!;
  const latest = chain.steps[chain.steps.length - 1]!;
  const w = latest.warning;
  const tz = latest.location.tz;
  const field = (label: string, value: string) => `${label}${w0.colon}${value}`;
  const time = (iso: string | null) => formatTime(iso, tz, lang);
  const issuedBy = [w.sender ? clip(oneLine(w.sender), FIELD_MAX) : '', time(w.pubTime)]
    .filter((s) => s !== '')
    .join(lang === 'zh' ? '，' : ', ');
  const lines = [
    [
      field(w0.place, placeOf(latest)),
      field(w0.type, clip(oneLine(w.typeName ?? w.typeCode ?? w0.notGiven), FIELD_MAX)),
      field(w0.level, levelField(w, lang)),
    ].join(w0.sep),
    field(w0.issued, issuedBy),
    ...(latest.eventType === 'cancel' || latest.eventType === 'expired'
      ? [
          field(w0.endedAt[latest.eventType], time(latest.occurredAt.toISOString())),
          field(w0.planned, `${time(w.startTime)} ${w0.to} ${time(w.endTime)}`),
        ]
      : [field(w0.inForce, `${time(w.startTime)} ${w0.to} ${time(w.endTime)}`)]),
    ...(latest.inForceWhenSubscribed ? [w0.inForceWhenSubscribed] : []),
  ];
  let changed: string | null = null;
  if (chain.steps.length > 1) {
    const history = chain.steps.map((s) => w0.event[s.eventType]).join(' → ');
    const from = levelField(first.warning, lang);
    const to = levelField(w, lang);
    const levelChange =
      from === to ? '' : `${lang === 'zh' ? '；' : '; '}${w0.level} ${from} → ${to}`;
    changed = field(w0.changed, `${history}${levelChange}`);
  }
  const instruction = w.instruction?.trim()
    ? `\n\n${w0.instruction}${w0.colon}${w.instruction.trim()}`
    : '';
  return {
    latest,
    tag: eventTag(latest),
    title: titleOf(latest),
    lines,
    changed,
    text: `${latest.textInChinese ? `${w0.textInChinese}\n` : ''}${w.text.trim()}${instruction}`,
  };
}

/** Attribution lines in one message: they repeat across warnings, and the footer must stay small. */
const MAX_ATTRIBUTIONS = 4;

function footerLines(ns: readonly Notification[], messageId: string, lang: Lang): string[] {
  const attributions = new Set<string>();
  for (const n of ns) {
    for (const a of [n.attribution, ...(n.attributions ?? [])]) {
      const line = clip(oneLine(a), FIELD_MAX);
      if (line !== '') attributions.add(line);
    }
  }
  return [
    ...[...attributions].slice(0, MAX_ATTRIBUTIONS),
    `${WORDS[lang].messageId}${WORDS[lang].colon}${messageId}`,
  ];
}

// ---------------------------------------------------------------------------------------------
// Fitting: every chain with its whole text if it fits; else texts cut to one common length
// (long texts lose most, short ones nothing); else the lowest chains left out, said in the message.

/** Texts are never cut below this many characters while whole chains can be left out instead. */
const MIN_TEXT = 80;

interface Plan {
  shown: number;
  /** UTF-16 units of text per chain (cut between graphemes); Infinity: whole texts. */
  textMax: number;
}

function fit<T>(
  facts: readonly ChainFacts[],
  build: (plan: Plan) => T,
  size: (body: T) => number,
  limit: number,
): { body: T; shown: number } {
  const fits = (plan: Plan) => size(build(plan)) <= limit;
  const whole = build({ shown: facts.length, textMax: Infinity });
  if (size(whole) <= limit) return { body: whole, shown: facts.length };

  // The most chains that fit with short texts (at least one, whatever happens).
  let lo = 1;
  let hi = facts.length;
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    if (fits({ shown: mid, textMax: MIN_TEXT })) lo = mid;
    else hi = mid - 1;
  }
  const shown = lo;
  // The longest common text length that fits with those chains, from MIN_TEXT (0 when even that
  // does not fit). Not from 0 whatever happens: a text cut shorter than it is gains a
  // "truncated" note, so a shorter cut can make a longer body, and 0 need not fit.
  const longest = Math.max(...facts.slice(0, shown).map((f) => f.text.length));
  let a = fits({ shown, textMax: MIN_TEXT }) ? MIN_TEXT : 0;
  let b = Math.max(longest, a);
  while (a < b) {
    const mid = Math.ceil((a + b) / 2);
    if (fits({ shown, textMax: mid })) a = mid;
    else b = mid - 1;
  }
  return { body: build({ shown, textMax: a }), shown };
}

const utf8 = (s: string) => Buffer.byteLength(s, 'utf8');

// ---------------------------------------------------------------------------------------------
// WeCom: markdown v1, three colours (warning = orange-red, info = green, comment = grey).

type WecomColour = 'warning' | 'info' | 'comment';

function wecomColour(n: Notification): WecomColour {
  if (isEnded(n)) return 'info';
  return levelRank(shownLevel(n.warning)) >= levelRank('黄色') ? 'warning' : 'comment';
}

/**
 * Upstream text in WeCom and DingTalk markdown: neither documents an escape, so the characters
 * that open a construct become their full-width twins, which read the same in Chinese text.
 */
const MARKDOWN_TWINS: Record<string, string> = {
  '*': '＊',
  _: '＿',
  '`': '｀',
  '#': '＃',
  '[': '［',
  ']': '］',
  '<': '＜',
  '>': '＞',
  '~': '～',
  '|': '｜',
};

function twinEscape(text: string): string {
  return text.replace(/[*_`#[\]<>~|]/g, (c) => MARKDOWN_TWINS[c] ?? c);
}

function shownText(f: ChainFacts, textMax: number, lang: Lang): { text: string; note: string } {
  const cut = cutText(f.text, textMax);
  return {
    text: cut.shortened && cut.text !== '' ? `${cut.text}…` : cut.text,
    note: cut.shortened ? WORDS[lang].shortened.trim() : '',
  };
}

function wecomPost(
  notifications: readonly Notification[],
  messageId: string,
): RobotPost<WecomBody> {
  const lang = languageOf(notifications);
  const chains = robotChains(notifications);
  const facts = chains.map((c) => chainFacts(c, lang));
  const head = headline(chains, lang, twinEscape);
  const footer = footerLines(notifications, messageId, lang).map(twinEscape);
  const build = ({ shown, textMax }: Plan): WecomBody => {
    const parts: string[] = [];
    if (facts.length > 1) parts.push(`### ${head}`);
    for (const f of facts.slice(0, shown)) {
      const colour = wecomColour(f.latest);
      const heading = `**<font color="${colour}">${f.tag}</font> ${twinEscape(f.title)}**`;
      const lines = [heading, ...f.lines.map((l) => `> ${twinEscape(l)}`)];
      if (f.changed) lines.push(`> <font color="comment">${twinEscape(f.changed)}</font>`);
      const body = shownText(f, textMax, lang);
      if (body.text) lines.push(twinEscape(body.text));
      if (body.note) lines.push(`<font color="comment">${twinEscape(body.note)}</font>`);
      parts.push(lines.join('\n'));
    }
    if (shown < facts.length) {
      parts.push(
        `<font color="comment">${twinEscape(WORDS[lang].omitted(facts.length - shown))}</font>`,
      );
    }
    parts.push(footer.map((l) => `<font color="comment">${l}</font>`).join('\n'));
    return { msgtype: 'markdown', markdown: { content: parts.join('\n\n') } };
  };
  return {
    ...fit(facts, build, (b) => utf8(b.markdown.content), ROBOT_LIMITS.wecomContentBytes),
    chains,
  };
}

// ---------------------------------------------------------------------------------------------
// DingTalk: markdown with a title; colour is not official, so the level is said in words.

/** DingTalk's markdown joins single line breaks: upstream paragraphs need a blank line. */
function dingtalkParagraphs(text: string): string {
  return text
    .split(/\r?\n+/)
    .map((l) => l.trim())
    .filter((l) => l !== '')
    .join('\n\n');
}

function dingtalkPost(
  notifications: readonly Notification[],
  messageId: string,
): RobotPost<DingtalkBody> {
  const lang = languageOf(notifications);
  const chains = robotChains(notifications);
  const facts = chains.map((c) => chainFacts(c, lang));
  const title = clip(headline(chains, lang), ROBOT_LIMITS.dingtalkTitleChars);
  const footer = footerLines(notifications, messageId, lang).map(twinEscape);
  const build = ({ shown, textMax }: Plan): DingtalkBody => {
    const parts: string[] = [];
    if (facts.length > 1) parts.push(`### ${headline(chains, lang, twinEscape)}`);
    for (const f of facts.slice(0, shown)) {
      const lines = [`#### ${f.tag} ${twinEscape(f.title)}`];
      const items = [...f.lines, ...(f.changed ? [f.changed] : [])];
      lines.push(items.map((l) => `- ${twinEscape(l)}`).join('\n'));
      const body = shownText(f, textMax, lang);
      if (body.text) lines.push(dingtalkParagraphs(twinEscape(body.text)));
      if (body.note) lines.push(`*${twinEscape(body.note)}*`);
      parts.push(lines.join('\n\n'));
    }
    if (shown < facts.length)
      parts.push(`*${twinEscape(WORDS[lang].omitted(facts.length - shown))}*`);
    parts.push(`---\n\n${footer.map((l) => `###### ${l}`).join('\n\n')}`);
    return {
      msgtype: 'markdown',
      markdown: { title, text: parts.join('\n\n') },
      at: { atMobiles: [], atUserIds: [], isAtAll: false },
      msgUuid: messageId,
    };
  };
  return {
    ...fit(facts, build, (b) => utf8(b.markdown.text), ROBOT_LIMITS.dingtalkTextBytes),
    chains,
  };
}

// ---------------------------------------------------------------------------------------------
// Feishu / Lark: an interactive card, header coloured by the highest level.

const FEISHU_TEMPLATE: Record<Level, FeishuTemplate> = {
  红色: 'red',
  橙色: 'orange',
  黄色: 'yellow',
  蓝色: 'blue',
  白色: 'grey',
  unknown: 'grey',
};

function feishuColour(n: Notification): FeishuTemplate {
  return isEnded(n) ? 'green' : FEISHU_TEMPLATE[shownLevel(n.warning)];
}

/** Feishu's card markdown takes HTML entities for the characters that open its constructs. */
function feishuEscape(text: string): string {
  return text.replace(/[*~<>[\]_`#]/g, (c) => `&#${c.charCodeAt(0)};`);
}

function feishuPost(
  notifications: readonly Notification[],
  messageId: string,
): RobotPost<FeishuBody> {
  const lang = languageOf(notifications);
  const chains = robotChains(notifications);
  const facts = chains.map((c) => chainFacts(c, lang));
  const title = headline(chains, lang);
  const ongoing = facts.find((f) => !isEnded(f.latest));
  const template: FeishuTemplate = ongoing ? feishuColour(ongoing.latest) : 'green';
  const footer = footerLines(notifications, messageId, lang);
  const build = ({ shown, textMax }: Plan): FeishuBody => {
    const elements: FeishuElement[] = [];
    facts.slice(0, shown).forEach((f, i) => {
      if (i > 0) elements.push({ tag: 'hr' });
      const colour = feishuColour(f.latest);
      const lines = [
        `**<font color='${colour}'>${f.tag}</font> ${feishuEscape(f.title)}**`,
        ...f.lines.map(feishuEscape),
      ];
      if (f.changed) lines.push(`<font color='grey'>${feishuEscape(f.changed)}</font>`);
      const body = shownText(f, textMax, lang);
      if (body.text) lines.push('', feishuEscape(body.text));
      if (body.note) lines.push(`<font color='grey'>${feishuEscape(body.note)}</font>`);
      elements.push({ tag: 'markdown', content: lines.join('\n') });
    });
    if (shown < facts.length) {
      elements.push({
        tag: 'markdown',
        content: `<font color='grey'>${feishuEscape(WORDS[lang].omitted(facts.length - shown))}</font>`,
      });
    }
    elements.push({ tag: 'hr' });
    elements.push({
      tag: 'note',
      elements: footer.map((content) => ({ tag: 'plain_text' as const, content })),
    });
    return {
      msg_type: 'interactive',
      card: {
        config: { wide_screen_mode: true },
        header: { template, title: { tag: 'plain_text', content: title } },
        elements,
      },
    };
  };
  return {
    ...fit(facts, build, (b) => utf8(JSON.stringify(b)), ROBOT_LIMITS.feishuBodyBytes),
    chains,
  };
}

// ---------------------------------------------------------------------------------------------

function languageOf(notifications: readonly Notification[]): Lang {
  const first = notifications[0];
  // A message always carries at least one notification; an empty one is a caller's bug.
  if (!first) throw new RangeError('a robot message needs at least one notification');
  return first.lang;
}

/** The vendor's body for one message (1..N notifications of one subscriber). */
/**
 * One post of a message: its body, and how many of the message's chains (highest level first)
 * it shows. When they do not all fit the vendor's limit, the body names how many are left out;
 * the deliver job sends those in a message of their own instead (`splitRobotMessage`).
 */
export interface RobotPost<B extends RobotBody = RobotBody> {
  body: B;
  shown: number;
  chains: RobotChain[];
}

export function planRobotPost(
  vendor: RobotVendor,
  notifications: readonly Notification[],
  messageId: string,
): RobotPost {
  switch (vendor) {
    case 'wecom':
      return wecomPost(notifications, messageId);
    case 'dingtalk':
      return dingtalkPost(notifications, messageId);
    case 'feishu':
      return feishuPost(notifications, messageId);
  }
}

export function renderRobotBody(
  vendor: RobotVendor,
  notifications: readonly Notification[],
  messageId: string,
): RobotBody {
  return planRobotPost(vendor, notifications, messageId).body;
}

export const renderWecom = (notifications: readonly Notification[], messageId: string) =>
  wecomPost(notifications, messageId).body;
export const renderDingtalk = (notifications: readonly Notification[], messageId: string) =>
  dingtalkPost(notifications, messageId).body;
export const renderFeishu = (notifications: readonly Notification[], messageId: string) =>
  feishuPost(notifications, messageId).body;

/**
 * What of a robot message one post can carry whole: the notifications of the chains that fit
 * (`now`), and those of the chains that do not (`later`, empty when all fit), which go in a
 * message of their own rather than being left out. A chain is never split between posts.
 */
export function splitRobotMessage(
  vendor: RobotVendor,
  notifications: readonly Notification[],
  messageId: string,
): { now: Notification[]; later: Notification[] } {
  const post = planRobotPost(vendor, notifications, messageId);
  if (post.shown >= post.chains.length) return { now: [...notifications], later: [] };
  const later = new Set(post.chains.slice(post.shown).flatMap((c) => c.steps));
  return {
    now: notifications.filter((n) => !later.has(n)),
    later: notifications.filter((n) => later.has(n)),
  };
}
