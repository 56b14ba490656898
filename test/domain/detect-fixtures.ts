import type { Warning } from '../../src/domain/warning.js';

/** A normalized v7 record; times are well inside their validity unless a test says otherwise. */
export function warning(id: string, overrides: Partial<Warning> = {}): Warning {
  return {
    id,
    source: 'v7',
    title: `Warning ${id}`,
    sender: '杭州市气象台',
    pubTime: '2026-07-01T08:00+08:00',
    startTime: '2026-07-01T08:00+08:00',
    endTime: '2026-07-02T20:00+08:00',
    status: 'active',
    level: '黄色',
    severity: 'moderate',
    color: 'yellow',
    typeCode: '1003',
    typeName: '暴雨',
    text: `Text of ${id}`,
    related: [],
    instruction: null,
    raw: { id },
    ...overrides,
  };
}

/** 2026-07-01T00:00:00Z, i.e. 08:00 in Hangzhou, when the fixtures are published. */
export const T0 = new Date('2026-07-01T00:00:00Z');

export function at(minutesAfterT0: number): Date {
  return new Date(T0.getTime() + minutesAfterT0 * 60_000);
}
