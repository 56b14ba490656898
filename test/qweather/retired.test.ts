import { describe, expect, it } from 'vitest';
import {
  AuthError,
  BadRequestError,
  DeprecatedEndpointError,
  isRetiredEndpoint,
} from '../../src/qweather/errors.js';

describe('isRetiredEndpoint', () => {
  const on = { operation: 'warningList' as const };
  it('reads 403 Deprecated and a JSON 404 problem as a retired endpoint', () => {
    expect(isRetiredEndpoint(new DeprecatedEndpointError('gone', { ...on, httpStatus: 403 }))).toBe(
      true,
    );
    expect(
      isRetiredEndpoint(new BadRequestError('no path', { ...on, httpStatus: 404 }, [], true)),
    ).toBe(true);
  });

  it('never reads an HTML 404 (a proxy, a wrong base URL) as retirement', () => {
    expect(isRetiredEndpoint(new BadRequestError('no path', { ...on, httpStatus: 404 }))).toBe(
      false,
    );
  });

  it('does not read an old-style {"code":"404"}, other refusals or failures so', () => {
    // Old style: HTTP 200 with the status in the body ("no such location").
    expect(
      isRetiredEndpoint(new BadRequestError('unknown', { ...on, httpStatus: 200, code: '404' })),
    ).toBe(false);
    expect(isRetiredEndpoint(new BadRequestError('bad', { ...on, httpStatus: 400 }))).toBe(false);
    expect(isRetiredEndpoint(new AuthError('refused', { ...on, httpStatus: 403 }))).toBe(false);
    expect(isRetiredEndpoint(new Error('timeout'))).toBe(false);
  });
});
