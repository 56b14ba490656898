import { mkdir, writeFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { SMTPServer, type SMTPServerSession } from 'smtp-server';

/**
 * A real SMTP server on 127.0.0.1 that keeps what it receives: for tests (scripted 4xx/5xx
 * replies) and for `qwn demo` (.eml files in a folder). No test-framework imports, so it can
 * move to src/ as is.
 */

/** The parts of mailparser's ParsedMail the tests read (mailparser ships no types). */
export interface ParsedMail {
  subject?: string;
  messageId?: string;
  from?: { text: string };
  to?: { text: string } | { text: string }[];
  text?: string;
  html?: string | false;
  headers: Map<string, unknown>;
  headerLines: { key: string; line: string }[];
}

const require = createRequire(import.meta.url);
const { simpleParser } = require('mailparser') as {
  simpleParser: (source: Buffer) => Promise<ParsedMail>;
};

export interface ReceivedMail {
  /** The message exactly as it came over DATA. */
  raw: Buffer;
  parsed: ParsedMail;
  envelope: { from: string | undefined; to: string[] };
  /** Where the .eml was written, when the sink saves them. */
  file?: string;
  receivedAt: Date;
}

export interface SmtpReply {
  code: number;
  message: string;
}

export interface SmtpSinkOptions {
  /** Write every accepted message as `<n>-<message id>.eml` into this folder. */
  saveDir?: string;
  /** Only this host; defaults to 127.0.0.1. */
  host?: string;
  port?: number;
  /** Called for every accepted message (the demo prints a line). */
  onMessage?: (mail: ReceivedMail) => void;
}

export interface SmtpSink {
  readonly port: number;
  /** smtp://127.0.0.1:<port>, usable as SMTP_URL (any credentials are accepted). */
  readonly url: string;
  /** Accepted messages, oldest first. */
  readonly messages: readonly ReceivedMail[];
  /** DATA attempts answered with a scripted error. */
  readonly rejected: readonly { envelope: ReceivedMail['envelope']; reply: SmtpReply }[];
  /** Answer the next `count` messages at DATA with this reply (451 by default). */
  failNext(count: number, reply?: Partial<SmtpReply>): void;
  /** Refuse this recipient at RCPT TO (550 by default) until reset. */
  rejectRecipient(address: string, reply?: Partial<SmtpReply>): void;
  /** Resolves once `count` messages have been accepted in total. */
  waitForMessages(count: number, timeoutMs?: number): Promise<readonly ReceivedMail[]>;
  /** Forget received messages and scripted replies. */
  reset(): void;
  close(): Promise<void>;
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

export async function startSmtpSink(options: SmtpSinkOptions = {}): Promise<SmtpSink> {
  const messages: ReceivedMail[] = [];
  const rejected: { envelope: ReceivedMail['envelope']; reply: SmtpReply }[] = [];
  const failQueue: SmtpReply[] = [];
  const recipientReplies = new Map<string, SmtpReply>();
  const waiters = new Set<() => void>();
  if (options.saveDir) await mkdir(options.saveDir, { recursive: true });

  const server = new SMTPServer({
    authOptional: true,
    // No certificate here: without STARTTLS on offer, clients stay on plain text.
    disabledCommands: ['STARTTLS'],
    logger: false,
    // Pooled clients keep idle connections open; closing the sink must not wait 30 s for them.
    closeTimeout: 200,
    onAuth(_auth, _session, callback) {
      callback(null, { user: 'sink' });
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
    const parsed = await simpleParser(raw);
    const mail: ReceivedMail = { raw, parsed, envelope, receivedAt: new Date() };
    if (options.saveDir) {
      const id = (parsed.messageId ?? 'message').replace(/[^A-Za-z0-9@._-]/g, '');
      const file = join(
        options.saveDir,
        `${String(messages.length + 1).padStart(4, '0')}-${id}.eml`,
      );
      await writeFile(file, raw);
      mail.file = file;
    }
    messages.push(mail);
    options.onMessage?.(mail);
    for (const wake of waiters) wake();
  }

  await new Promise<void>((resolve, reject) => {
    server.server.once('error', reject);
    server.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => resolve());
  });
  const port = (server.server.address() as AddressInfo).port;

  return {
    port,
    url: `smtp://127.0.0.1:${port}`,
    messages,
    rejected,
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
    },
    close() {
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
