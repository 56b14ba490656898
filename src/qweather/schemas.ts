import { z } from 'zod';

/**
 * Wire shapes, as lenient as the upstream is inconsistent (docs/design.md, invariant 5): numbers may come
 * as strings or numbers, optional fields may be missing, null or empty, and unknown fields are
 * ignored. What is essential to a record (an id, a name, coordinates) stays required, so a truly
 * different shape is reported instead of being read as "nothing there".
 */

/**
 * A field the product only shows or passes on: any scalar as a string, and anything else (an
 * object where a string belongs) as absent, so one odd field never costs the answer.
 */
const lenientText = z
  .unknown()
  .transform((v) =>
    typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean'
      ? String(v)
      : undefined,
  )
  .optional();

/** Any scalar, as a string; null/undefined stay undefined. */
const text = z
  .union([z.string(), z.number(), z.boolean()])
  .nullish()
  .transform((v) => (v === null || v === undefined ? undefined : String(v)));

const requiredText = z
  .union([z.string(), z.number()])
  .transform((v) => String(v).trim())
  .pipe(z.string().min(1));

const coordinate = z
  .union([z.string(), z.number()])
  .transform((v) => Number(v))
  .pipe(z.number());

const textList = z
  .union([z.array(text), text])
  .nullish()
  .transform((v) => {
    if (v === null || v === undefined) return [];
    const items = Array.isArray(v) ? v : [v];
    return items.filter((s): s is string => typeof s === 'string' && s.trim() !== '');
  });

/** The top-level status: `code`, or `status` in some samples; absent in v1 bodies. */
export const envelopeSchema = z.looseObject({
  code: text,
  status: text,
  error: z
    .looseObject({
      status: text,
      type: text,
      title: text,
      detail: text,
      invalidParams: z.unknown().optional(),
    })
    .nullish(),
});

export const placeSchema = z.object({
  id: requiredText,
  name: requiredText,
  lat: coordinate,
  lon: coordinate,
  adm1: text,
  adm2: text,
  country: text,
  cnty: text,
  tz: text,
  utcOffset: text,
  isDst: text,
  type: text,
  rank: text,
  fxLink: text,
});
export type RawPlace = z.output<typeof placeSchema>;

const referShape = z.object({ sources: textList, license: textList });

/** The data attribution: shown, never needed, so a refer of another shape reads as none. */
export const referSchema = z
  .unknown()
  .transform((r) => {
    const parsed = referShape.safeParse(r);
    return parsed.success ? parsed.data : { sources: [], license: [] };
  })
  .optional()
  .transform((r) => r ?? { sources: [], license: [] });

export const cityLookupSchema = z.object({ location: z.array(placeSchema).nullish() });
export const topCitiesSchema = z.object({ topCityList: z.array(placeSchema).nullish() });
export const poiSchema = z.object({ poi: z.array(placeSchema).nullish() });

export const v7WarningSchema = z.object({
  id: requiredText,
  sender: text,
  pubTime: text,
  title: text,
  startTime: text,
  endTime: text,
  status: text,
  level: text,
  severity: text,
  severityColor: text,
  type: text,
  typeName: text,
  // `urgency` and `certainty` are not read: the product has no use for them, and an object in
  // their place (seen in the field) must not cost the record.
  text: text,
  related: textList,
});
export type RawV7Warning = z.output<typeof v7WarningSchema>;

/**
 * A warning-now answer. Its `warning` array is required: an answer without it says nothing
 * about what is in force and must never read as "no warnings" (README, promises). Records are
 * kept as unknown here and read one by one (src/qweather/records.ts).
 */
export const warningNowSchema = z.object({
  updateTime: lenientText,
  fxLink: lenientText,
  warning: z.array(z.unknown()),
  refer: referSchema,
});

/** A warning-list answer; its `warningLocList` array is required, as `warning` above. */
export const warningListSchema = z.object({
  updateTime: lenientText,
  warningLocList: z.array(z.unknown()),
  refer: referSchema,
});

export const listedLocationSchema = z.object({ locationId: requiredText });

const nullishObject = <T extends z.core.$ZodLooseShape>(shape: T) => z.object(shape).nullish();

export const v1AlertSchema = z.object({
  id: requiredText,
  senderName: text,
  issuedTime: text,
  messageType: nullishObject({ code: text, supersedes: textList }),
  eventType: nullishObject({ name: text, code: text }),
  // `urgency`, `certainty`, `icon`, `criteria` and `responseTypes` are not read (see
  // v7WarningSchema); `icon` has been seen as an object.
  severity: lenientText,
  color: nullishObject({ code: text }),
  effectiveTime: text,
  onsetTime: text,
  // Some of QWeather's pages spell it `expiredTime`.
  expireTime: text,
  expiredTime: text,
  headline: text,
  description: text,
  instruction: text,
});
export type RawV1Alert = z.output<typeof v1AlertSchema>;

/**
 * A Weather Alert v1 answer. `alerts` may be missing or empty only when `metadata.zeroResult`
 * is true (a real "none"); any other answer without the array is malformed (README, promises).
 */
export const weatherAlertSchema = z
  .object({
    metadata: z
      .object({
        tag: lenientText,
        zeroResult: z
          .unknown()
          .transform((v) => v === true || v === 'true' || v === 1 || v === '1')
          .optional(),
        attributions: z
          .unknown()
          .transform((v) => {
            const parsed = textList.safeParse(v);
            return parsed.success ? parsed.data : [];
          })
          .optional(),
      })
      .nullish(),
    alerts: z.array(z.unknown()).nullish(),
  })
  .refine((body) => Array.isArray(body.alerts) || body.metadata?.zeroResult === true, {
    message: 'no alerts array and no metadata.zeroResult: true',
    path: ['alerts'],
  });
