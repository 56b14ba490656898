import { describe, expect, it } from 'vitest';
import { formatRecentTargets, type RecentRun, type Target } from '../../bench/report.js';

/** The table at the top of BENCHMARKS.md: the last full runs' targets side by side. */

const target = (name: string, value: string, met: boolean): Target => ({
  name,
  goal: '≤ 60 s',
  measured: 0,
  unit: 's',
  digits: 1,
  value,
  met,
});

describe('the targets of the last full runs', () => {
  it('puts the newest run first, marks what a run missed, and dashes a target it did not have', () => {
    const runs: RecentRun[] = [
      { startedAt: '2026-11-27T10:00:00.000Z', targets: [target('storm cycle', '70.0 s', false)] },
      {
        startedAt: '2026-11-28T21:55:33.620Z',
        targets: [target('storm cycle', '55.0 s', true), target('new one', '1.0 s', true)],
      },
    ];
    const lines = formatRecentTargets(runs).split('\n');
    expect(lines[0]).toBe('| target | goal | 2026-11-28 21:55 | 2026-11-27 10:00 |');
    expect(lines[2]).toBe('| storm cycle | ≤ 60 s | 55.0 s | 70.0 s MISSED |');
    expect(lines[3]).toBe('| new one | ≤ 60 s | 1.0 s | – |');
    expect(lines).toHaveLength(4);
  });

  it('is empty without a run', () => {
    expect(formatRecentTargets([])).toBe('');
  });
});
