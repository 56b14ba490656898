import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ReceivedMail } from '../demo/smtp-sink.js';
import type { ReceivedRequest } from '../demo/webhook-receiver.js';
import type { RobotSinkPost } from '../demo/robot-sink.js';

/**
 * The sandbox's inbox: one HTML page listing what qwn sent (emails, webhooks with their
 * signature check, robot posts), newest first, and each email's text on a page of its own.
 * Plain HTML without JavaScript: it reloads itself every few seconds.
 */

export interface InboxSources {
  mails(): readonly ReceivedMail[];
  hooks(): readonly ReceivedRequest[];
  posts(): readonly RobotSinkPost[];
  /** The text part of a mail, as a reader sees it. */
  textOf(mail: ReceivedMail): Promise<string>;
}

const escape = (text: string) =>
  text.replace(
    /[&<>"']/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!,
  );

const page = (title: string, body: string, refresh: boolean) => `<!doctype html>
<html lang="en"><head><meta charset="utf-8">${refresh ? '<meta http-equiv="refresh" content="5">' : ''}
<title>${escape(title)}</title>
<style>body{font:15px/1.45 system-ui,sans-serif;margin:2em;max-width:70em}table{border-collapse:collapse;width:100%}
td,th{text-align:left;padding:.3em .6em;border-bottom:1px solid #ddd;vertical-align:top}
pre{white-space:pre-wrap;background:#f6f6f6;padding:1em}.bad{color:#b00}.ok{color:#070}</style>
</head><body>${body}</body></html>`;

/** The inbox's index page. */
export function renderInbox(s: Pick<InboxSources, 'mails' | 'hooks' | 'posts'>): string {
  const mails = s
    .mails()
    .map((m, i) => ({ m, i }))
    .reverse();
  const hooks = [...s.hooks()].reverse();
  const posts = s
    .posts()
    .map((p, i) => ({ p, i }))
    .reverse();
  const mailRows = mails
    .map(
      ({ m, i }) =>
        `<tr><td>${escape(m.receivedAt.toISOString())}</td><td>${escape(m.envelope.to.join(', '))}</td>` +
        `<td><a href="/mail/${i}">${escape(m.subject ?? '(no subject)')}</a></td></tr>`,
    )
    .join('');
  const hookRows = hooks
    .map((r) => {
      const type = (r.json as { type?: unknown } | undefined)?.type;
      const check = r.verified
        ? '<span class="ok">signature verified</span>'
        : `<span class="bad">not verified: ${escape(r.verifyError ?? 'unknown')}</span>`;
      return (
        `<tr><td>${escape(r.receivedAt.toISOString())}</td><td>${escape(r.path)}</td>` +
        `<td>${escape(typeof type === 'string' ? type : '')}</td><td>${check}</td></tr>`
      );
    })
    .join('');
  const postRows = posts
    .map(({ p }) => `<tr><td><pre>${escape(p.content)}</pre></td></tr>`)
    .join('');
  return page(
    'qwn sandbox',
    `<h1>qwn sandbox</h1>
<h2>Emails (${mails.length})</h2><table><tr><th>received</th><th>to</th><th>subject</th></tr>${mailRows}</table>
<h2>Webhooks (${hooks.length})</h2><table><tr><th>received</th><th>path</th><th>type</th><th>signature</th></tr>${hookRows}</table>
<h2>Robot posts (${posts.length})</h2><table>${postRows}</table>`,
    true,
  );
}

export async function startInbox(
  sources: InboxSources,
  port = 0,
): Promise<{ url: string; server: Server; close(): Promise<void> }> {
  const server = createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://localhost').pathname;
    const send = (status: number, html: string) => {
      res.writeHead(status, {
        'content-type': 'text/html; charset=utf-8',
        'cache-control': 'no-store',
      });
      res.end(html);
    };
    if (path === '/') return send(200, renderInbox(sources));
    const mail = /^\/mail\/(\d+)$/.exec(path);
    const found = mail ? sources.mails()[Number(mail[1])] : undefined;
    if (!found)
      return send(404, page('not found', '<p>Not found. <a href="/">Back</a></p>', false));
    void sources.textOf(found).then(
      (text) =>
        send(
          200,
          page(
            found.subject ?? 'mail',
            `<p><a href="/">← all mail</a></p><h1>${escape(found.subject ?? '(no subject)')}</h1>` +
              `<p>To: ${escape(found.envelope.to.join(', '))}<br>From: ${escape(found.envelope.from ?? '')}` +
              `${found.file ? `<br>Saved as ${escape(found.file)}` : ''}</p><pre>${escape(text)}</pre>`,
            false,
          ),
        ),
      () => send(500, page('error', '<p>This mail could not be read.</p>', false)),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve());
  });
  const { port: bound } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${bound}/`,
    server,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
