import { mkdir, writeFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { SMTPServer, type SMTPServerSession } from 'smtp-server';

/**
 * A real SMTP server on 127.0.0.1 that keeps what it receives: the mail sink of `qwn demo`
 * (.eml files in a folder) and of the channel and pipeline tests (scripted 4xx/5xx replies).
 * It parses nothing but the two headers it names things by; tests that read whole messages
 * parse them with mailparser through `enrich` (test/support/smtp-sink.ts), which keeps that
 * development dependency out of the demo.
 */

export interface ReceivedMail {
  /** The message exactly as it came over DATA. */
  raw: Buffer;
  /** The Subject header, encoded words decoded. */
  subject: string | undefined;
  /** The Message-ID header, without the angle brackets. */
  messageId: string | undefined;
  envelope: { from: string | undefined; to: string[] };
  /** Where the .eml was written, when the sink saves them. */
  file?: string;
  receivedAt: Date;
}

export interface SmtpReply {
  code: number;
  message: string;
}

export interface SmtpSinkOptions<M extends ReceivedMail = ReceivedMail> {
  /** Write every accepted message as `<n>-<message id>.eml` into this folder. */
  saveDir?: string;
  /** Adds to every accepted message before it is kept (tests attach a full parse). */
  enrich?: (mail: ReceivedMail) => Promise<M>;
}

export interface SmtpSink<M extends ReceivedMail = ReceivedMail> {
  readonly port: number;
  /** smtp://127.0.0.1:<port>, usable as SMTP_URL (any credentials are accepted). */
  readonly url: string;
  /** Accepted messages, oldest first. */
  readonly messages: readonly M[];
  /** DATA attempts answered with a scripted error. */
  readonly rejected: readonly { envelope: ReceivedMail['envelope']; reply: SmtpReply }[];
  /** Answer the next `count` messages at DATA with this reply (451 by default). */
  failNext(count: number, reply?: Partial<SmtpReply>): void;
  /** Logins tried (AUTH), refused or not. */
  readonly logins: number;
  /** Refuse every login with 535 (bad credentials) until told otherwise or reset. */
  refuseLogins(refuse: boolean): void;
  /** Refuse this recipient at RCPT TO (550 by default) until reset. */
  rejectRecipient(address: string, reply?: Partial<SmtpReply>): void;
  /** Resolves once `count` messages have been accepted in total. */
  waitForMessages(count: number, timeoutMs?: number): Promise<readonly M[]>;
  /** Forget received messages and scripted replies. */
  reset(): void;
  close(): Promise<void>;
}

/** The header section of a message, folded lines unfolded (RFC 5322 §2.2.3). */
function headerBlock(raw: Buffer): string {
  const text = raw.toString('latin1');
  const end = text.search(/\r?\n\r?\n/);
  return (end === -1 ? text : text.slice(0, end)).replace(/\r?\n(?=[ \t])/g, '');
}

function headerValue(headers: string, name: string): string | undefined {
  for (const line of headers.split(/\r?\n/)) {
    const colon = line.indexOf(':');
    if (colon > 0 && line.slice(0, colon).trim().toLowerCase() === name) {
      return line.slice(colon + 1).trim();
    }
  }
  return undefined;
}

/**
 * RFC 2047 encoded words (`=?UTF-8?B?…?=`, `=?UTF-8?Q?…?=`), as nodemailer writes a subject
 * that is not plain ASCII; whitespace between two encoded words is dropped, as the RFC says.
 */
export function decodeEncodedWords(value: string): string {
  const word = /=\?([^?]+)\?([BbQq])\?([^?]*)\?=/g;
  const joined = value.replace(/(\?=)\s+(?==\?)/g, '$1');
  return joined.replace(word, (whole, charset: string, encoding: string, text: string) => {
    const bytes =
      encoding.toUpperCase() === 'B'
        ? Buffer.from(text, 'base64')
        : Buffer.from(
            text
              .replace(/_/g, ' ')
              .replace(/=([0-9A-Fa-f]{2})/g, (_m, hex: string) =>
                String.fromCharCode(parseInt(hex, 16)),
              ),
            'latin1',
          );
    try {
      return new TextDecoder(charset.toLowerCase()).decode(bytes);
    } catch {
      return whole;
    }
  });
}

function replyError(reply: SmtpReply): Error {
  return Object.assign(new Error(reply.message), { responseCode: reply.code });
}

function envelopeOf(session: SMTPServerSession): ReceivedMail['envelope'] {
  const from = session.envelope.mailFrom;
  return {
    from: from ? from.address : undefined,
    to: session.envelope.rcptTo.map((r) => r.address),
  };
}

export async function startSmtpSink<M extends ReceivedMail = ReceivedMail>(
  options: SmtpSinkOptions<M> = {},
): Promise<SmtpSink<M>> {
  const messages: M[] = [];
  const rejected: { envelope: ReceivedMail['envelope']; reply: SmtpReply }[] = [];
  const failQueue: SmtpReply[] = [];
  const recipientReplies = new Map<string, SmtpReply>();
  const waiters = new Set<() => void>();
  let saved = 0;
  let logins = 0;
  let refusingLogins = false;
  if (options.saveDir) await mkdir(options.saveDir, { recursive: true });

  const server = new SMTPServer({
    authOptional: true,
    // No certificate here: without STARTTLS on offer, clients stay on plain text.
    disabledCommands: ['STARTTLS'],
    logger: false,
    // Pooled clients keep idle connections open; closing the sink must not wait 30 s for them.
    closeTimeout: 200,
    onAuth(_auth, _session, callback) {
      logins += 1;
      // smtp-server answers an error here with 535 5.7.8 and its message.
      if (refusingLogins) callback(new Error('Invalid username or password'));
      else callback(null, { user: 'sink' });
    },
    onRcptTo(address, _session, callback) {
      const reply = recipientReplies.get(address.address.toLowerCase());
      callback(reply ? replyError(reply) : null);
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('error', (err) => callback(err));
      stream.on('end', () => {
        const envelope = envelopeOf(session);
        const scripted = failQueue.shift();
        if (scripted) {
          rejected.push({ envelope, reply: scripted });
          callback(replyError(scripted));
          return;
        }
        const raw = Buffer.concat(chunks);
        void accept(raw, envelope).then(
          () => callback(null, 'queued as sink'),
          (err: unknown) => callback(err instanceof Error ? err : new Error(String(err))),
        );
      });
    },
  });

  async function accept(raw: Buffer, envelope: ReceivedMail['envelope']): Promise<void> {
    const headers = headerBlock(raw);
    const messageId = headerValue(headers, 'message-id')?.replace(/^<|>$/g, '');
    const subjectText = headerValue(headers, 'subject');
    const base: ReceivedMail = {
      raw,
      subject: subjectText === undefined ? undefined : decodeEncodedWords(subjectText),
      messageId,
      envelope,
      receivedAt: new Date(),
    };
    const mail = options.enrich ? await options.enrich(base) : (base as M);
    if (options.saveDir) {
      const id = (messageId ?? 'message').replace(/[^A-Za-z0-9@._-]/g, '');
      // Numbered in arrival order, taken before the write so two messages never share one.
      saved += 1;
      const file = join(options.saveDir, `${String(saved).padStart(4, '0')}-${id}.eml`);
      await writeFile(file, raw);
      mail.file = file;
    }
    messages.push(mail);
    for (const wake of waiters) wake();
  }

  // smtp-server emits a client's socket error (ECONNRESET when a sender process is killed) on
  // the server; without a listener it would be an uncaught exception in the sink's process.
  server.on('error', () => undefined);
  await new Promise<void>((resolve, reject) => {
    server.server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const port = (server.server.address() as AddressInfo).port;

  return {
    port,
    url: `smtp://127.0.0.1:${port}`,
    messages,
    rejected,
    get logins() {
      return logins;
    },
    refuseLogins(refuse) {
      refusingLogins = refuse;
    },
    failNext(count, reply = {}) {
      for (let i = 0; i < count; i += 1) {
        failQueue.push({
          code: reply.code ?? 451,
          message: reply.message ?? '4.3.0 Temporary failure, try again later',
        });
      }
    },
    rejectRecipient(address, reply = {}) {
      recipientReplies.set(address.toLowerCase(), {
        code: reply.code ?? 550,
        message: reply.message ?? '5.1.1 No such user here',
      });
    },
    waitForMessages(count, timeoutMs = 10_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          if (messages.length < count) return;
          clearTimeout(timer);
          waiters.delete(check);
          resolve(messages);
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(
            new Error(`smtp sink: ${messages.length} of ${count} messages after ${timeoutMs} ms`),
          );
        }, timeoutMs);
        waiters.add(check);
        check();
      });
    },
    reset() {
      messages.length = 0;
      rejected.length = 0;
      failQueue.length = 0;
      recipientReplies.clear();
      logins = 0;
      refusingLogins = false;
    },
    close() {
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
