import { channelOfAddress, kindOf } from '../channels/kinds.js';
import { randomUUID } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { previewMessage, sampleWarning } from '../admin/preview.js';
import { loadConfig, MissingSettingError } from '../config.js';
import { assertMigrated } from '../db/problems.js';
import { createLogger, registerSecret, scrub } from '../logger.js';
import { sendThroughChannel } from '../channels/registry.js';
import { createRuntime } from '../runtime/runtime.js';
import { parseCommandLine, UsageError } from './command.js';
import { oneSubscriber } from './preview.js';
import type { CliIo } from './io.js';

const USAGE = `usage: qwn test-send <subscriber>

Sends one message marked as a test (【测试】 / [TEST], "no such warning is in force") through the
subscriber's real channel: SMTP_URL for email, the signed webhook, or the chat robot. Prints
what the channel answered, and exits 1 when it refused. The send is recorded in test_sends,
never in the ledger: it is not a warning notification and is never retried. An unsubscribed
or disabled subscriber is refused.`;

export async function run(argv: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseCommandLine(argv, {}, 'test-send', { positionals: true });
  if (values.help) {
    io.out(USAGE);
    return 0;
  }
  if (positionals.length !== 1) {
    throw new UsageError('name one subscriber (see qwn test-send --help)');
  }
  const config = loadConfig(io.env);
  if (!config.databaseUrl) throw new MissingSettingError('DATABASE_URL is not set');
  const logger = createLogger('error', io.logs);
  registerSecret(config.unsubscribeSecret);
  const runtime = createRuntime(config, logger, { upstream: 'none' });
  const { ctx } = runtime;
  try {
    await assertMigrated(ctx.db);
    const sub = await oneSubscriber(ctx.db, positionals[0]!, 'test-send');
    if (sub.unsubscribed || !sub.active) {
      throw new UsageError(
        `the subscriber is ${sub.unsubscribed ? 'unsubscribed' : `not active (${sub.disabled_reason ?? 'paused'})`}: nothing is sent to it`,
      );
    }
    const channel = channelOfAddress(sub);
    const required = kindOf(channel).requiredSetting;
    if (required === 'SMTP_URL' && !config.smtpUrl) {
      throw new MissingSettingError(`${required} is not set`);
    }
    const now = ctx.now();
    const id = randomUUID();
    const message = previewMessage(sub, sampleWarning(sub, now, true), 'new', now, id);
    let ok = true;
    let detail: string;
    registerSecret(sub.webhook_secret ?? undefined);
    try {
      const sent = await sendThroughChannel(ctx, channel, sub, message);
      if (sent.outcome === 'wait') {
        ok = false;
        detail = `the robot's rate limit is reached: try again in ${Math.ceil(sent.waitMs / 1000)} s`;
      } else {
        detail = sent.answer;
      }
    } catch (err) {
      ok = false;
      detail = scrub(err instanceof Error ? err.message : String(err));
    }
    await ctx.db.execute(
      sql`INSERT INTO test_sends (id, subscriber_id, channel, sent_at, ok, detail)
          VALUES (${id}, ${sub.subscriber_id}, ${channel}, ${now}, ${ok}, ${detail})`,
    );
    io.out(`${ok ? 'sent' : 'not sent'}: test message ${id} by ${channel}: ${detail}`);
    return ok ? 0 : 1;
  } finally {
    await runtime.close();
  }
}
