import { createRequire } from 'node:module';
import {
  startSmtpSink as startSink,
  type ReceivedMail as SinkMail,
  type SmtpSink as Sink,
  type SmtpSinkOptions as SinkOptions,
} from '../../src/demo/smtp-sink.js';

/**
 * The SMTP sink is production code now (the mail sink of `qwn demo`); the tests get the same
 * sink with every message also parsed by mailparser, a development dependency the demo avoids.
 */

export { decodeEncodedWords, type SmtpReply } from '../../src/demo/smtp-sink.js';

/** The parts of mailparser's ParsedMail the tests read (mailparser ships no types). */
export interface ParsedAddresses {
  text: string;
  value: { name: string; address?: string }[];
}

export interface ParsedMail {
  subject?: string;
  messageId?: string;
  date?: Date;
  from?: ParsedAddresses;
  to?: ParsedAddresses | ParsedAddresses[];
  text?: string;
  html?: string | false;
  headers: Map<string, unknown>;
  headerLines: { key: string; line: string }[];
}

const require = createRequire(import.meta.url);
const { simpleParser } = require('mailparser') as {
  simpleParser: (source: Buffer) => Promise<ParsedMail>;
};

/** A raw message as a mail reader sees it. */
export const parseMail = (raw: Buffer): Promise<ParsedMail> => simpleParser(raw);

export type ReceivedMail = SinkMail & { parsed: ParsedMail };
export type SmtpSink = Sink<ReceivedMail>;
export type SmtpSinkOptions = Omit<SinkOptions<ReceivedMail>, 'enrich'>;

export function startSmtpSink(options: SmtpSinkOptions = {}): Promise<SmtpSink> {
  return startSink<ReceivedMail>({
    ...options,
    enrich: async (mail) => ({ ...mail, parsed: await parseMail(mail.raw) }),
  });
}
