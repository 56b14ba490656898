import { describeRobot } from '../channels/robot-identity.js';
import { scrub } from '../logger.js';
import type { SeedProblem } from './seed-validate.js';

/**
 * One line per seed problem that an admin can act on in a file of 500 subscribers: where
 * (`subscribers[5].email`), whose (the subscriber's name, else its address) and what was
 * written (the value, shortened when long). Pure: reads the parsed document only.
 */

/** The seed fields that hold a chat robot's URL, which carries its key. */
const ROBOT_FIELDS: readonly string[] = ['wecom', 'dingtalk', 'feishu'];

/** Values are quoted up to this many characters. */
export const QUOTE_MAX = 60;

/** `text` on one line, at most `max` characters, with an ellipsis when it was longer. */
export function shorten(text: string, max = QUOTE_MAX): string {
  const line = text.replace(/\s+/g, ' ');
  return line.length <= max ? line : `${line.slice(0, max - 1)}…`;
}

const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** The value at a problem's field path (`locations[1].range`) inside one subscriber. */
function valueAt(subscriber: unknown, field: string): unknown {
  let value: unknown = subscriber;
  for (const [, key, index] of field.matchAll(/([^.[\]]+)|\[(\d+)\]/g)) {
    if (index !== undefined) value = Array.isArray(value) ? value[Number(index)] : undefined;
    else value = isRecord(value) ? value[key!] : undefined;
  }
  return value;
}

/** A webhook URL may carry credentials or a token: shown without them. */
const showAddress = (text: string) => shorten(scrub(text));

/** How the subscriber is known to the admin: its name, else its address; null when neither. */
function whose(subscriber: unknown): string | null {
  if (!isRecord(subscriber)) return null;
  const { name, email, webhook } = subscriber;
  if (typeof name === 'string' && name.trim() !== '') return shorten(name.trim());
  if (typeof email === 'string' && email !== '') return showAddress(email);
  if (typeof webhook === 'string' && webhook !== '') return showAddress(webhook);
  // A robot URL is a secret (docs/messages.md): by host and fingerprint only.
  for (const vendor of ROBOT_FIELDS) {
    const url = subscriber[vendor];
    if (typeof url === 'string' && url !== '') return `${vendor} ${describeRobot(url)}`;
  }
  return null;
}

/** The value as written, quoted; null when there is none to show or it must not be shown. */
function quoted(field: string, value: unknown, message: string): string | null {
  // A webhook or robot secret is never repeated, not even a malformed one, nor a robot URL.
  if (/(^|\.)secret$/.test(field) || ROBOT_FIELDS.includes(field)) return null;
  let text: string;
  if (typeof value === 'string') text = field === 'webhook' ? scrub(value) : value;
  else if (typeof value === 'number' || typeof value === 'boolean' || value === null) {
    text = String(value);
  } else if (value === undefined) return null;
  else text = JSON.stringify(value);
  const shown = shorten(text);
  // Messages that already quote the value ("朝阳 matches 2 places") need no second copy.
  if (
    message.includes(`"${shown}"`) ||
    message.startsWith(`${shown} `) ||
    // A message that opens with the value quoted (shortened its own way) already shows it.
    message.startsWith('"') ||
    (shown.length >= 2 && message.includes(shown))
  ) {
    return null;
  }
  return typeof value === 'string' ? `"${shown}"` : shown;
}

export function describeSeedProblem(doc: unknown, problem: SeedProblem): string {
  if (problem.index === null) return `${problem.field || '(file)'}: ${problem.message}`;
  const subscribers = isRecord(doc) && Array.isArray(doc.subscribers) ? doc.subscribers : [];
  const subscriber: unknown = subscribers[problem.index];
  const separator = problem.field === '' || problem.field.startsWith('[') ? '' : '.';
  const who = whose(subscriber);
  const where = `subscribers[${problem.index}]${separator}${problem.field}${who ? ` (${who})` : ''}`;
  const value =
    problem.field === ''
      ? null
      : quoted(problem.field, valueAt(subscriber, problem.field), problem.message);
  return `${where}: ${problem.message}${value === null ? '' : `; got ${value}`}`;
}
