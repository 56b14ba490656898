import { z } from 'zod';

/**
 * Wire shapes, as lenient as the upstream is inconsistent (DESIGN invariant 5): numbers may come
 * as strings or numbers, optional fields may be missing, null or empty, and unknown fields are
 * ignored. What is essential to a record (an id, a name, coordinates) stays required, so a truly
 * different shape is reported instead of being read as "nothing there".
 */

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

export const referSchema = z
  .object({ sources: textList, license: textList })
  .nullish()
  .transform((r) => ({ sources: r?.sources ?? [], license: r?.license ?? [] }));

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
  urgency: text,
  certainty: text,
  text: text,
  related: textList,
});
export type RawV7Warning = z.output<typeof v7WarningSchema>;

export const warningNowSchema = z.object({
  updateTime: text,
  fxLink: text,
  // Kept as unknown here so that each record is validated on its own with its raw form kept.
  warning: z.array(z.unknown()).nullish(),
  refer: referSchema,
});

export const warningListSchema = z.object({
  updateTime: text,
  warningLocList: z.array(z.object({ locationId: requiredText })).nullish(),
  refer: referSchema,
});

const nullishObject = <T extends z.core.$ZodLooseShape>(shape: T) => z.object(shape).nullish();

export const v1AlertSchema = z.object({
  id: requiredText,
  senderName: text,
  issuedTime: text,
  messageType: nullishObject({ code: text, supersedes: textList }),
  eventType: nullishObject({ name: text, code: text }),
  urgency: text,
  severity: text,
  certainty: text,
  icon: text,
  color: nullishObject({ code: text }),
  effectiveTime: text,
  onsetTime: text,
  // Some of QWeather's pages spell it `expiredTime`.
  expireTime: text,
  expiredTime: text,
  headline: text,
  description: text,
  criteria: text,
  instruction: text,
});
export type RawV1Alert = z.output<typeof v1AlertSchema>;

export const weatherAlertSchema = z.object({
  metadata: z
    .object({
      tag: text,
      zeroResult: z
        .union([z.boolean(), z.string(), z.number()])
        .nullish()
        .transform((v) => v === true || v === 'true' || v === 1 || v === '1'),
      attributions: textList,
    })
    .nullish(),
  alerts: z.array(z.unknown()).nullish(),
});
