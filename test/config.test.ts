import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/config.js';

describe('loadConfig', () => {
  it('applies the documented defaults', () => {
    const config = loadConfig({});
    expect(config.redisUrl).toBe('redis://127.0.0.1:6379');
    expect(config.qweather.alertSource).toBe('auto');
    expect(config.qweather.v1Points).toBe('exact');
    expect(config.qweather.monthlyCalls).toBeUndefined();
    expect(config.warningRange).toBe('cn');
    expect(config.pollIntervalSeconds).toBe(300);
    expect(config.webhookAllowPrivate).toBe(false);
    expect(config.httpPort).toBe(9464);
    // /metrics stays on this host unless the operator opens it (docs/operations.md).
    expect(config.httpHost).toBe('127.0.0.1');
    expect(config.logLevel).toBe('info');
    expect(config.expireAfterMisses).toBe(2);
    expect(config.retentionDays).toBe(90);
  });

  it('binds HTTP_HOST as an IP address, and refuses a name', () => {
    expect(loadConfig({ HTTP_HOST: '0.0.0.0' }).httpHost).toBe('0.0.0.0');
    expect(loadConfig({ HTTP_HOST: '::1' }).httpHost).toBe('::1');
    expect(() => loadConfig({ HTTP_HOST: 'localhost' })).toThrow(
      /HTTP_HOST.*must be an IP address/,
    );
  });

  it('keeps rows at least a week, past the 72-hour detection window', () => {
    expect(loadConfig({ RETENTION_DAYS: '7' }).retentionDays).toBe(7);
    expect(() => loadConfig({ RETENTION_DAYS: '3' })).toThrow(/^RETENTION_DAYS: .*\(got "3"\)$/);
  });

  it('is frozen all the way down', () => {
    const config = loadConfig({ QWEATHER_API_URL: 'http://127.0.0.1:1/' });
    expect(Object.isFrozen(config)).toBe(true);
    expect(Object.isFrozen(config.qweather)).toBe(true);
    expect(config.qweather.apiUrl).toBe('http://127.0.0.1:1');
    expect(config.qweather.geoUrl).toBe('http://127.0.0.1:1');
  });

  it('names every bad variable on its own line', () => {
    let error: unknown;
    try {
      loadConfig({ POLL_INTERVAL_SECONDS: 'soon', QWEATHER_ALERT_SOURCE: 'v9', HTTP_PORT: '-1' });
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const lines = (error as ConfigError).message.split('\n');
    expect(lines).toHaveLength(3);
    expect(lines.some((l) => l.startsWith('POLL_INTERVAL_SECONDS:'))).toBe(true);
    expect(lines.some((l) => l.startsWith('QWEATHER_ALERT_SOURCE:'))).toBe(true);
    expect(lines.some((l) => l.startsWith('HTTP_PORT:'))).toBe(true);
  });

  it('never echoes a secret-looking value', () => {
    expect(() => loadConfig({ SMTP_URL: 'ftp://user:hunter2@x' })).toThrow(/^SMTP_URL: /);
    expect(() => loadConfig({ SMTP_URL: 'ftp://user:hunter2@x' })).not.toThrow(/hunter2/);
  });

  it('quotes a bad value, shortened, and URLs without their credentials or key', () => {
    expect(() => loadConfig({ DATABASE_URL: 'mysql://root:hunter2@db.internal:3306/qwn' })).toThrow(
      'DATABASE_URL: must be a postgres:// or postgresql:// URL (got "mysql://[redacted]@db.internal:3306/qwn")',
    );
    expect(() =>
      loadConfig({ QWEATHER_API_URL: 'ftp://api.example.com/?key=abc123secret' }),
    ).toThrow(
      'QWEATHER_API_URL: must be an http(s) URL (got "ftp://api.example.com/?key=[redacted]")',
    );
    expect(() => loadConfig({ POLL_INTERVAL_SECONDS: '5'.repeat(50) + 'm'.repeat(50) })).toThrow(
      `POLL_INTERVAL_SECONDS: must be a whole number (got "${'5'.repeat(50)}${'m'.repeat(9)}…")`,
    );
    expect(() => loadConfig({ QWEATHER_KEY_TRANSPORT: 'cookie' })).toThrow(/\(got "cookie"\)$/);
  });

  it('wants all three JWT variables or none', () => {
    expect(() => loadConfig({ QWEATHER_JWT_KEY_ID: 'abc' })).toThrow(/set all three or none/);
  });

  it('wants an email address in MAIL_FROM, with or without a name', () => {
    expect(loadConfig({ MAIL_FROM: 'alerts@example.com' }).mailFrom).toBe('alerts@example.com');
    expect(loadConfig({ MAIL_FROM: '"和风预警" <alerts@example.com>' }).mailFrom).toBe(
      '"和风预警" <alerts@example.com>',
    );
    // Without an address every email would be refused at send time: say so at start-up.
    for (const bad of ['QWN Alerts', 'alerts', '<>', 'QWN <alerts at example.com>']) {
      expect(() => loadConfig({ MAIL_FROM: bad })).toThrow(
        /^MAIL_FROM: must hold one email address on one line/,
      );
    }
  });

  it('refuses a MAIL_FROM that could add a header or a second sender (README, promises)', () => {
    for (const bad of [
      'qwn <alerts@example.com>\r\nBcc: victim@evil.example',
      'qwn <alerts@example.com>\nReply-To: x@evil.example',
      'alerts@example.com\u0000',
      'alerts@example.com, attacker@evil.example',
      'alerts@example.com; attacker@evil.example',
    ]) {
      expect(() => loadConfig({ MAIL_FROM: bad })).toThrow(/^MAIL_FROM: /);
    }
  });

  it('reads EXPIRE_AFTER_SECONDS, 900 by default and 0 allowed', () => {
    expect(loadConfig({}).expireAfterSeconds).toBe(900);
    expect(loadConfig({ EXPIRE_AFTER_SECONDS: '0' }).expireAfterSeconds).toBe(0);
    expect(() => loadConfig({ EXPIRE_AFTER_SECONDS: '-1' })).toThrow(/^EXPIRE_AFTER_SECONDS: /);
  });

  it('reads PUBLIC_URL as a base URL and wants a long UNSUBSCRIBE_SECRET, never echoed', () => {
    const config = loadConfig({
      PUBLIC_URL: 'https://alerts.example.com/qwn/',
      UNSUBSCRIBE_SECRET: 'x'.repeat(32),
    });
    expect(config.publicUrl).toBe('https://alerts.example.com/qwn');
    expect(config.unsubscribeSecret).toBe('x'.repeat(32));
    expect(loadConfig({}).publicUrl).toBeUndefined();
    expect(loadConfig({}).unsubscribeSecret).toBeUndefined();
    for (const bad of [
      'alerts.example.com',
      'ftp://alerts.example.com',
      'https://alerts.example.com/?a=1',
      'https://alerts.example.com/#top',
      'https://user:pw@alerts.example.com',
    ]) {
      expect(() => loadConfig({ PUBLIC_URL: bad }), bad).toThrow(/^PUBLIC_URL: /);
    }
    const short = 'too-short-secret-hunter2';
    expect(() => loadConfig({ UNSUBSCRIBE_SECRET: short })).toThrow(
      /^UNSUBSCRIBE_SECRET: must be at least 32 characters$/,
    );
    expect(() => loadConfig({ UNSUBSCRIBE_SECRET: short })).not.toThrow(/hunter2/);
  });

  it('reads booleans', () => {
    expect(loadConfig({ WEBHOOK_ALLOW_PRIVATE: 'true' }).webhookAllowPrivate).toBe(true);
    expect(loadConfig({ CHECK_ALL_LISTED: '0' }).checkAllListed).toBe(false);
    expect(() => loadConfig({ WEBHOOK_ALLOW_PRIVATE: 'maybe' })).toThrow(/WEBHOOK_ALLOW_PRIVATE/);
  });
});
