import { describe, expect, it } from 'vitest';
import { pointAt } from '../../src/domain/points.js';
import { JOBS } from '../../src/pipeline/workers.js';

const cycle = {
  cycleId: '6f1c1d0e-8a6b-4c53-9d55-2f1b8e0a7c11',
  cycleStartedAt: '2026-11-29T06:00:00+08:00',
};

describe('the check job’s payload', () => {
  it('takes a point key exactly as pointAt writes it', () => {
    const key = pointAt(30.1, 120)!.key;
    expect(JOBS.check.payload.safeParse({ ...cycle, pointId: key }).success).toBe(true);
  });

  it.each(['30.10,120', '30.1,120.0', '95,10', '-0,120'])(
    'refuses %s, which matches the pattern but names no point, before any retry',
    (pointId) => {
      const parsed = JOBS.check.payload.safeParse({ ...cycle, pointId });
      expect(parsed.success).toBe(false);
      expect(parsed.error?.issues.map((issue) => issue.path.join('.'))).toContain('pointId');
    },
  );
});
