import { describe, expect, it } from 'vitest';
import { legacyHostWarning } from '../../src/qweather/hosts.js';

describe('legacyHostWarning', () => {
  it('names the per-account host that replaces a shared one', () => {
    for (const host of ['api.qweather.com', 'devapi.qweather.com', 'DevAPI.qweather.com']) {
      const line = legacyHostWarning('QWEATHER_API_URL', `https://${host}/`);
      expect(line).toContain(host.toLowerCase());
      expect(line).toContain('https://<your-id>.re.qweatherapi.com');
    }
    expect(legacyHostWarning('QWEATHER_GEO_URL', 'https://geoapi.qweather.com')).toContain(
      'https://<your-id>.re.qweatherapi.com/geo',
    );
  });

  it('says nothing about an account host, the simulator or no URL', () => {
    expect(legacyHostWarning('QWEATHER_API_URL', 'https://abc123.re.qweatherapi.com')).toBeNull();
    expect(legacyHostWarning('QWEATHER_API_URL', 'http://127.0.0.1:43117')).toBeNull();
    expect(
      legacyHostWarning('QWEATHER_API_URL', 'https://api.qweather.com.example.org'),
    ).toBeNull();
    expect(legacyHostWarning('QWEATHER_API_URL', undefined)).toBeNull();
  });
});
