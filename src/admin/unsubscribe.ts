/**
 * The one-click unsubscribe endpoint (docs/subscribers.md, RFC 8058), served by the worker's HTTP
 * server at `/unsubscribe/TOKEN`:
 *
 * - `POST` with `List-Unsubscribe=One-Click` (form-encoded or multipart) unsubscribes at once
 *   and answers 200: no cookie, no redirect, no login, as mailbox providers require.
 * - `GET` (and `HEAD`) only shows a page whose button makes that POST: link scanners and
 *   previews fetch URLs, and a fetch must never unsubscribe anyone.
 * - A token that is malformed, forged, or signed for another subscriber or address answers 404
 *   and changes nothing.
 */
import { eq, isNull, and, sql } from 'drizzle-orm';
import type { Db } from '../db/client.js';
import { subscribers } from '../db/schema.js';
import type { Logger } from '../logger.js';
import { subscriberIdOfToken, verifyUnsubscribeToken } from '../channels/unsubscribe-token.js';

/** The one-click body is 26 bytes; multipart framing adds a few hundred. */
export const UNSUBSCRIBE_BODY_LIMIT = 8 * 1024;

export interface UnsubscribeRequest {
  readonly method: 'GET' | 'HEAD' | 'POST';
  readonly token: string;
  readonly contentType: string | undefined;
  /** Empty for GET and HEAD. */
  readonly body: Buffer;
}

export interface PageResponse {
  readonly status: number;
  /** A whole HTML document. */
  readonly html: string;
}

export type UnsubscribeEndpoint = (request: UnsubscribeRequest) => Promise<PageResponse>;

/** Headers of every unsubscribe page: nothing cached, nothing leaked, nothing framed. */
export const PAGE_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  'content-type': 'text/html; charset=utf-8',
  'cache-control': 'no-store',
  // The token is in the URL: it must not travel on in a Referer.
  'referrer-policy': 'no-referrer',
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'x-robots-tag': 'noindex',
  'content-security-policy':
    "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
});

export function createUnsubscribeEndpoint(deps: {
  db: Db;
  secret: string;
  logger: Logger;
}): UnsubscribeEndpoint {
  return async (request) => {
    const id = subscriberIdOfToken(request.token);
    if (id === undefined) return NOT_FOUND;
    const [row] = await deps.db
      .select({
        id: subscribers.id,
        email: subscribers.email,
        unsubscribedAt: subscribers.unsubscribedAt,
      })
      .from(subscribers)
      .where(eq(subscribers.id, id));
    if (
      !row ||
      row.email === null ||
      !verifyUnsubscribeToken(deps.secret, request.token, { id: row.id, email: row.email })
    ) {
      return NOT_FOUND;
    }

    if (request.method !== 'POST') {
      return row.unsubscribedAt === null ? CONFIRM : DONE;
    }
    if (!isOneClick(request.contentType, request.body)) return { ...CONFIRM, status: 400 };
    // Idempotent: a second POST keeps the time of the first.
    const changed = await deps.db
      .update(subscribers)
      .set({ unsubscribedAt: sql`now()`, updatedAt: sql`now()` })
      .where(and(eq(subscribers.id, row.id), isNull(subscribers.unsubscribedAt)))
      .returning({ id: subscribers.id });
    if (changed.length > 0) deps.logger.info({ subscriberId: row.id }, 'subscriber unsubscribed');
    return DONE;
  };
}

/**
 * Whether the body says `List-Unsubscribe=One-Click` (RFC 8058 §3.1), as
 * application/x-www-form-urlencoded or multipart/form-data; a body without a content type is
 * read as form-encoded.
 */
export function isOneClick(contentType: string | undefined, body: Buffer): boolean {
  const type = (contentType ?? '').split(';')[0]!.trim().toLowerCase();
  if (type === '' || type === 'application/x-www-form-urlencoded') {
    return new URLSearchParams(body.toString('utf8'))
      .getAll('List-Unsubscribe')
      .includes('One-Click');
  }
  if (type === 'multipart/form-data') {
    const boundary = /;\s*boundary=(?:"([^"]+)"|([^;\s]+))/i.exec(contentType ?? '');
    const delimiter = boundary?.[1] ?? boundary?.[2];
    if (delimiter === undefined) return false;
    return multipartFields(body.toString('utf8'), delimiter).some(
      (field) => field.name === 'List-Unsubscribe' && field.value.trim() === 'One-Click',
    );
  }
  return false;
}

/** The simple fields of a multipart/form-data body (RFC 7578); files and nesting are ignored. */
function multipartFields(text: string, boundary: string): { name: string; value: string }[] {
  const fields: { name: string; value: string }[] = [];
  // The first chunk is the preamble, the last the epilogue after the closing `--`.
  for (const part of text.split(`--${boundary}`).slice(1)) {
    if (part.startsWith('--')) break;
    const headerEnd = /\r?\n\r?\n/.exec(part);
    if (!headerEnd) continue;
    const headers = part.slice(0, headerEnd.index);
    const disposition = /^content-disposition:\s*form-data\s*;(.*)$/im.exec(headers)?.[1];
    const name = disposition && /(?:^|;)\s*name="([^"]*)"/i.exec(disposition)?.[1];
    if (!name) continue;
    const value = part.slice(headerEnd.index + headerEnd[0].length).replace(/\r?\n$/, '');
    fields.push({ name, value });
  }
  return fields;
}

// ---------------------------------------------------------------------------------------------
// Pages: static text in both languages (the token names no language), no script.

function page(title: string, body: string): string {
  return `<!doctype html>
<html lang="zh">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex">
<title>${title}</title>
<style>body{font-family:system-ui,sans-serif;max-width:34rem;margin:3rem auto;padding:0 1rem;line-height:1.5}button{font-size:1rem;padding:.5rem 1.25rem}p.en{color:#555}</style>
</head>
<body>
${body}
</body>
</html>
`;
}

const CONFIRM: PageResponse = {
  status: 200,
  html: page(
    '退订预警邮件 / Unsubscribe',
    `<h1>退订预警邮件</h1>
<p>点击下面的按钮，停止接收这个地址的天气预警邮件。</p>
<p class="en">Press the button to stop the weather warning emails to this address.</p>
<form method="post">
<input type="hidden" name="List-Unsubscribe" value="One-Click">
<button type="submit">退订 / Unsubscribe</button>
</form>`,
  ),
};

const DONE: PageResponse = {
  status: 200,
  html: page(
    '已退订 / Unsubscribed',
    `<h1>已退订</h1>
<p>这个地址不会再收到天气预警邮件。如需恢复，请联系发送方的管理员。</p>
<p class="en">You are unsubscribed: this address receives no more weather warning emails. To receive them again, ask the administrator who set them up.</p>`,
  ),
};

const NOT_FOUND: PageResponse = {
  status: 404,
  html: page(
    '链接无效 / Link not valid',
    `<h1>链接无效</h1>
<p>这个退订链接无效或已过期。请使用最近一封预警邮件中的链接。</p>
<p class="en">This unsubscribe link is not valid (any more). Use the link in the latest warning email.</p>`,
  ),
};
