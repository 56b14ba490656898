import { z } from 'zod';
import { applyCheck } from '../detection/apply-check.js';
import type { CheckOutcome } from '../detection/check-outcome.js';
import { placeSubject } from '../detection/place-subject.js';
import { pointSubject } from '../detection/point-subject.js';
import { parsePointKey } from '../domain/points.js';
import type { PipelineContext } from '../runtime/context.js';

export { CHECK_JOB } from '../detection/apply-check.js';

/**
 * When the check's cycle started: a miss counts only in a cycle that began after the warning
 * was last seen (src/domain/detect.ts, `countsAsMiss`). Jobs enqueued before it was carried
 * count their cycle as starting when they run.
 */
const cycleStartedAt = z.iso.datetime({ offset: true }).optional();

/** English subscribers watch the place or point: its warnings are asked for in English too. */
const english = z.boolean().optional();

/** A v7 place's check. */
export const checkPlacePayload = z.object({
  cycleId: z.string().uuid(),
  placeId: z.string().regex(/^[A-Za-z0-9]{1,32}$/),
  cycleStartedAt,
  english,
});

/** A v1 point's check, told apart by `pointId`. */
export const checkPointPayload = z.object({
  cycleId: z.string().uuid(),
  // Exactly as `pointAt` writes it: "30.10,120" has the key's shape but names no point.
  pointId: z
    .string()
    .refine((key) => parsePointKey(key) !== null, 'not a point key as pointAt writes it'),
  cycleStartedAt,
  english,
});

export const checkPayload = z.union([checkPlacePayload, checkPointPayload]);
export type CheckPayload = z.infer<typeof checkPayload>;

/** The check job: one place (v7) or one point (v1), checked by `applyCheck`. */
export async function runCheck(ctx: PipelineContext, payload: CheckPayload): Promise<CheckOutcome> {
  if ('placeId' in payload) return applyCheck(ctx, placeSubject(payload.placeId), payload);
  // The payload's schema refused any key that names no point.
  const point = parsePointKey(payload.pointId)!;
  return applyCheck(ctx, pointSubject(point, ctx.config.qweather.v1Points), payload);
}
