import { v7Warning, type Scenario, type V7WarningRecord } from '../simulator/index.js';

/**
 * The story `qwn demo` plays on the simulator: a typhoon approaching Guangdong, raised from blue
 * to red and then cancelled; a rainstorm in Hangzhou updated and then left to expire; and
 * warnings at places nobody watches, which the warning list names but no check ever fetches.
 * Times sit around the real clock, because a warning whose end time has passed is over at once.
 */

export const DEMO_PLACES = {
  zhanjiang: { id: '101281001', name: '湛江' },
  zhuhai: { id: '101280701', name: '珠海' },
  shenzhen: { id: '101280601', name: '深圳' },
  guangzhou: { id: '101280101', name: '广州' },
  hangzhou: { id: '101210101', name: '杭州' },
} as const;

/** Listed by the warning list in the story, watched by no demo subscriber. */
export const UNWATCHED_PLACES = {
  beijing: { id: '101010100', name: '北京' },
  harbin: { id: '101050101', name: '哈尔滨' },
  lhasa: { id: '101140101', name: '拉萨' },
} as const;

export const GUANGDONG = [
  DEMO_PLACES.zhanjiang,
  DEMO_PLACES.zhuhai,
  DEMO_PLACES.shenzhen,
  DEMO_PLACES.guangzhou,
] as const;

export interface StoryStep {
  /** One line saying what happens in this step. */
  readonly title: string;
}

export interface Storyline {
  readonly steps: readonly StoryStep[];
  /** The same steps as the simulator plays them. */
  readonly scenario: Scenario;
}

const TYPHOON = '1001';
const RAINSTORM = '1003';
const LEVELS = ['蓝色', '黄色', '橙色', '红色'] as const;

/** A raw record, served by the simulator exactly as `v7Warning` built it. */
type RawRecord = { id: string; title: string } & V7WarningRecord;
const raw = (record: V7WarningRecord) => record as RawRecord;

export function buildStoryline(now: Date): Storyline {
  const minute = Math.floor(now.getTime() / 60_000) * 60_000;
  const at = (minutesFromNow: number) => new Date(minute + minutesFromNow * 60_000);
  // Far enough ahead that nothing ends by its end time while the demo runs: the rainstorm has
  // to end by going missing, which is the case worth showing.
  const endTime = at(12 * 60);

  /**
   * The typhoon's chain at one place: one record per step from `firstStep` on, each raising the
   * level and naming the one before in `related`, then a cancel of the last one.
   */
  const typhoonChain = (placeId: string, firstStep: number, cancelStep: number) => {
    const byStep = new Map<number, RawRecord>();
    let previous: RawRecord | undefined;
    for (let step = firstStep; step <= cancelStep; step += 1) {
      const cancel = step === cancelStep;
      const level = cancel ? previous!.level : LEVELS[Math.min(step - firstStep, 3)]!;
      const record = raw(
        v7Warning({
          locationId: placeId,
          seq: step + 1,
          typeCode: TYPHOON,
          level: String(level),
          status: cancel ? 'cancel' : previous ? 'update' : 'active',
          ...(previous ? { related: previous.id } : {}),
          // An hour between steps in the story, ending shortly before the real clock.
          pubTime: at((step - cancelStep) * 60 - 10),
          endTime,
        }),
      );
      byStep.set(step, record);
      previous = record;
    }
    return byStep;
  };

  const CANCEL_STEP = 4;
  const chains = [
    [DEMO_PLACES.zhanjiang.id, typhoonChain(DEMO_PLACES.zhanjiang.id, 0, CANCEL_STEP)],
    [DEMO_PLACES.zhuhai.id, typhoonChain(DEMO_PLACES.zhuhai.id, 1, CANCEL_STEP)],
    [DEMO_PLACES.shenzhen.id, typhoonChain(DEMO_PLACES.shenzhen.id, 2, CANCEL_STEP)],
    [DEMO_PLACES.guangzhou.id, typhoonChain(DEMO_PLACES.guangzhou.id, 3, CANCEL_STEP)],
  ] as const;

  const rainYellow = raw(
    v7Warning({
      locationId: DEMO_PLACES.hangzhou.id,
      seq: 1,
      typeCode: RAINSTORM,
      level: '黄色',
      pubTime: at(-6 * 60),
      endTime,
    }),
  );
  const rainOrange = raw(
    v7Warning({
      locationId: DEMO_PLACES.hangzhou.id,
      seq: 2,
      typeCode: RAINSTORM,
      level: '橙色',
      status: 'update',
      related: rainYellow.id,
      pubTime: at(-5 * 60),
      endTime,
    }),
  );

  const unwatched = {
    [UNWATCHED_PLACES.beijing.id]: [
      raw(
        v7Warning({
          locationId: UNWATCHED_PLACES.beijing.id,
          typeCode: '1009',
          level: '黄色',
          pubTime: at(-7 * 60),
          endTime,
        }),
      ),
    ],
    [UNWATCHED_PLACES.harbin.id]: [
      raw(
        v7Warning({
          locationId: UNWATCHED_PLACES.harbin.id,
          typeCode: '1006',
          level: '蓝色',
          pubTime: at(-7 * 60),
          endTime,
        }),
      ),
    ],
    [UNWATCHED_PLACES.lhasa.id]: [
      raw(
        v7Warning({
          locationId: UNWATCHED_PLACES.lhasa.id,
          typeCode: '1014',
          level: '黄色',
          pubTime: at(-7 * 60),
          endTime,
        }),
      ),
    ],
  };

  const rainByStep: Record<number, RawRecord[]> = { 0: [rainYellow], 1: [rainOrange] };
  const titles = [
    'Typhoon warning (blue) at 湛江; rainstorm warning (yellow) in 杭州',
    'The typhoon nears: 湛江 yellow, 珠海 blue; 杭州 rainstorm raised to orange',
    '湛江 orange, 珠海 yellow, 深圳 blue; the 杭州 rainstorm drops off the list (missing once)',
    '湛江 red, 珠海 orange, 深圳 yellow, 广州 blue; 杭州 still missing (ended)',
    'The typhoon passes: every Guangdong warning cancelled',
  ];

  const steps = titles.map((title, index) => {
    const warnings: Record<string, RawRecord[]> = { ...unwatched };
    for (const [placeId, chain] of chains) {
      const record = chain.get(index);
      if (record) warnings[placeId] = [record];
    }
    const rain = rainByStep[index];
    if (rain) warnings[DEMO_PLACES.hangzhou.id] = rain;
    return { name: title, warnings };
  });

  return { steps: titles.map((title) => ({ title })), scenario: { steps } };
}
