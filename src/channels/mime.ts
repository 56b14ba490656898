import addressparser from 'nodemailer/lib/addressparser';

/**
 * The MIME form of a notification email: headers, then a multipart/alternative body with a text
 * and an HTML part, both UTF-8 in base64. Composed here rather than by nodemailer's composer,
 * which cost about twice the SMTP exchange itself in a storm (docs/benchmarks-history.md);
 * nodemailer still sends the result. Pure: the caller supplies the date and every address.
 */

export interface MimeAddress {
  /** Display name; may be empty or non-ASCII. */
  name: string;
  address: string;
}

export interface MimeEmail {
  from: MimeAddress;
  to: string;
  subject: string;
  /** With its angle brackets: `<id@host>`. */
  messageId: string;
  date: Date;
  /** Further header fields; their values must be printable ASCII. */
  headers: Readonly<Record<string, string>>;
  text: string;
  html: string;
  /** Separates the parts; must be outside the base64 alphabet (a `-` or `_` will do). */
  boundary: string;
}

/**
 * The sender of a From value such as `"qwn" <alerts@example.com>`; undefined unless it is one
 * address on one line (a CR or LF would let the value add header fields of its own).
 */
export function parseMailFrom(from: string): MimeAddress | undefined {
  // eslint-disable-next-line no-control-regex
  if (/[\x00-\x1f\x7f]/.test(from)) return undefined;
  const parsed = addressparser(from, { flatten: true });
  const [first] = parsed;
  if (parsed.length !== 1 || !first) return undefined;
  const address = first.address ?? '';
  return /^[^@\s<>,;"]+@[^@\s<>,;"]+$/.test(address) ? { name: first.name, address } : undefined;
}

export class MimeHeaderError extends Error {
  override readonly name = 'MimeHeaderError';
}

const PRINTABLE_ASCII = /^[\x20-\x7e]*$/;
/** No line breaks or other control characters (UTF-8 is fine: RFC 6532 addresses). */
// eslint-disable-next-line no-control-regex
const ONE_LINE = /^[^\x00-\x1f\x7f]*$/;
/** RFC 5322 asks for lines of at most 78 characters; 76 is what base64 bodies use. */
const BASE64_LINE = 76;
/** UTF-8 bytes per encoded-word: 39 bytes → 52 base64 characters → a 64-character word, which
 * fits a line after `Subject: ` or `From: `. */
const WORD_BYTES = 39;
const HEADER_LINE = 78;
/** RFC 5322's hard limit, CRLF excluded. */
const MAX_LINE = 998;
const CRLF = '\r\n';

/** An ASCII header value, refused when it could break out of its line. */
function asciiValue(field: string, value: string): string {
  if (!PRINTABLE_ASCII.test(value)) {
    throw new MimeHeaderError(`${field} header must be printable ASCII on one line`);
  }
  if (field.length + 2 + value.length > MAX_LINE) {
    throw new MimeHeaderError(`${field} header is longer than a mail line may be`);
  }
  return value;
}

function oneLine(field: string, value: string): string {
  if (!ONE_LINE.test(value)) throw new MimeHeaderError(`${field} header must be one line`);
  return value;
}

/**
 * RFC 2047 encoded-words (UTF-8, base64), each within a line's limit, folded onto continuation
 * lines. A code point is never split between two words.
 */
export function encodedWords(text: string): string {
  const words: string[] = [];
  let chunk: Buffer[] = [];
  let size = 0;
  const flush = () => {
    words.push(`=?UTF-8?B?${Buffer.concat(chunk).toString('base64')}?=`);
    chunk = [];
    size = 0;
  };
  for (const char of text) {
    const bytes = Buffer.from(char, 'utf8');
    if (size + bytes.length > WORD_BYTES) flush();
    chunk.push(bytes);
    size += bytes.length;
  }
  if (size > 0 || words.length === 0) flush();
  return words.join(`${CRLF} `);
}

/** Unstructured text (Subject): as is when short plain ASCII, else encoded-words. */
function unstructured(field: string, text: string): string {
  const plain =
    PRINTABLE_ASCII.test(text) &&
    field.length + 2 + text.length <= HEADER_LINE &&
    !text.includes('=?');
  return plain ? text : encodedWords(text);
}

/** A From value: the name quoted when it is short plain ASCII, else encoded-words. */
export function formatAddress(a: MimeAddress): string {
  const address = asciiValue('address', a.address);
  if (a.name === '') return address;
  if (PRINTABLE_ASCII.test(a.name) && !a.name.includes('=?')) {
    const quoted = `"${a.name.replace(/["\\]/g, '\\$&')}" <${address}>`;
    if ('From: '.length + quoted.length <= HEADER_LINE) return quoted;
  }
  const words = encodedWords(a.name);
  const lastLine = words.slice(words.lastIndexOf('\n') + 1);
  const fits = lastLine.length + 2 + address.length + 1 <= HEADER_LINE - 'From: '.length;
  return `${words}${fits ? ' ' : `${CRLF} `}<${address}>`;
}

/** RFC 5322 date-time in UTC: `Sun, 22 Nov 2026 01:20:00 +0000`. */
export function formatDate(date: Date): string {
  return date.toUTCString().replace(/GMT$/, '+0000');
}

/** Body text in canonical form (CRLF line breaks), as UTF-8 base64 in 76-character lines. */
function base64Body(text: string): string {
  const encoded = Buffer.from(text.replace(/\r?\n/g, CRLF), 'utf8').toString('base64');
  const lines: string[] = [];
  for (let i = 0; i < encoded.length; i += BASE64_LINE) {
    lines.push(encoded.slice(i, i + BASE64_LINE));
  }
  return lines.join(CRLF);
}

function part(contentType: string, text: string): string[] {
  return [
    `Content-Type: ${contentType}; charset=utf-8`,
    'Content-Transfer-Encoding: base64',
    '',
    base64Body(text),
  ];
}

export function composeMime(m: MimeEmail): Buffer {
  const boundary = asciiValue('boundary', m.boundary);
  const lines = [
    `From: ${formatAddress(m.from)}`,
    `To: ${oneLine('To', m.to)}`,
    `Subject: ${unstructured('Subject', m.subject)}`,
    `Date: ${formatDate(m.date)}`,
    `Message-ID: ${asciiValue('Message-ID', m.messageId)}`,
    ...Object.entries(m.headers).map(([field, value]) => `${field}: ${asciiValue(field, value)}`),
    'MIME-Version: 1.0',
    `Content-Type: multipart/alternative;${CRLF} boundary="${boundary}"`,
    '',
    `--${boundary}`,
    ...part('text/plain', m.text),
    `--${boundary}`,
    ...part('text/html', m.html),
    `--${boundary}--`,
    '',
  ];
  return Buffer.from(lines.join(CRLF), 'utf8');
}
