import { randomBytes } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { startRobotSink } from '../demo/robot-sink.js';
import { startSmtpSink, type ReceivedMail } from '../demo/smtp-sink.js';
import { startWebhookReceiver } from '../demo/webhook-receiver.js';
import { renderInbox, startInbox } from '../sandbox/inbox.js';
import { startSimulator } from '../simulator/index.js';
import { parseCommandLine } from './command.js';
import type { CliIo } from './io.js';

const USAGE = `usage: qwn sandbox [--dir DIR] [--secret whsec_…]

Everything qwn talks to, on this machine, to try your own seed file without Docker or real
accounts: the QWeather simulator (warnings set through its control API, docs/simulator.md), a
mail sink that saves every email as .eml in DIR/mail (default .sandbox/) with an index.html,
a webhook receiver that verifies every Standard Webhooks signature with the secret it prints,
a WeCom-style robot, and an inbox page that lists what arrived. It prints the environment lines
to paste into .env; Postgres and Redis are yours (DATABASE_URL, REDIS_URL). Ctrl-C stops it.`;

/** A Standard Webhooks secret: `whsec_` and 24 random bytes in base64. */
function newSecret(): string {
  return `whsec_${randomBytes(24).toString('base64')}`;
}

export async function run(argv: string[], io: CliIo): Promise<number> {
  const { values } = parseCommandLine(
    argv,
    { dir: { type: 'string' }, secret: { type: 'string' } },
    'sandbox',
  );
  if (values.help) {
    io.out(USAGE);
    return 0;
  }
  const dir = resolve(values.dir ?? '.sandbox');
  const secret = values.secret ?? newSecret();
  // mailparser ships no types: the one function used, typed here.
  const mailparserName = 'mailparser';
  const { simpleParser } = (await import(mailparserName)) as {
    simpleParser: (raw: Buffer) => Promise<{ text?: string }>;
  };

  const sim = await startSimulator();
  const hooks = await startWebhookReceiver({ secret });
  const robot = await startRobotSink();
  const smtp = await startSmtpSink({ saveDir: join(dir, 'mail') });
  const sources = {
    mails: (): readonly ReceivedMail[] => smtp.messages,
    hooks: () => hooks.requests,
    posts: () => robot.posts,
    textOf: async (mail: ReceivedMail) => (await simpleParser(mail.raw)).text ?? '',
  };
  // The static index beside the .eml files, rewritten once a second when something arrived.
  const writeIndex = () => writeFile(join(dir, 'mail', 'index.html'), renderInbox(sources));
  await writeIndex();
  let written = 0;
  const indexer = setInterval(() => {
    const arrived = sources.mails().length + sources.hooks().length + sources.posts().length;
    if (arrived === written) return;
    written = arrived;
    writeIndex().catch(() => undefined);
  }, 1000);
  const inbox = await startInbox(sources);

  io.out(`# qwn sandbox: paste these lines into .env (or export them), then run
#   npx qwn migrate && npx qwn seed <your seed file> && npx qwn worker   (or qwn poll --once)
QWEATHER_API_URL=${sim.url}
SMTP_URL=${smtp.url}
MAIL_FROM=qwn sandbox <alerts@sandbox.test>
WEBHOOK_ALLOW_PRIVATE=true
#
# Webhook subscribers: "webhook": "${hooks.url('/any/path')}", "secret": "${secret}"
# Robot subscribers:   "wecom": "${robot.url}"
# Warnings to play:    curl -X PUT ${sim.url}/_sim/warnings -d '{"101210101":[{"level":"红色","typeCode":"1003"}]}'
#                      (docs/simulator.md: scenarios, faults, the clock)
# What arrived:        ${inbox.url}  (mail also in ${join(dir, 'mail')})`);

  await new Promise<void>((done) => {
    process.once('SIGINT', done);
    process.once('SIGTERM', done);
  });
  clearInterval(indexer);
  await Promise.allSettled([
    inbox.close(),
    smtp.close(),
    hooks.close(),
    robot.close(),
    sim.close(),
  ]);
  // A browser's or a sender's kept-alive connection must not keep Ctrl-C from ending it.
  setTimeout(() => process.exit(0), 2000).unref();
  return 0;
}
