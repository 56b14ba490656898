import { countEmailSubscribers } from '../admin/subscribers.js';
import { MissingSettingError, type Config } from '../config.js';
import type { Db } from '../db/client.js';

/**
 * The commands that send (`qwn worker`, `qwn poll --once`) refuse to run without SMTP_URL while
 * any active subscriber receives email: every email would otherwise be dead at its first attempt,
 * and setting SMTP_URL afterwards would not send them.
 */
export async function refuseWithoutMail(db: Db, config: Config): Promise<void> {
  if (config.smtpUrl) return;
  const emailSubscribers = await countEmailSubscribers(db);
  if (emailSubscribers > 0) {
    throw new MissingSettingError(
      `SMTP_URL is not set and ${emailSubscribers} subscriber(s) receive email: set SMTP_URL ` +
        '(and MAIL_FROM), or remove their email addresses from the seed',
    );
  }
}
