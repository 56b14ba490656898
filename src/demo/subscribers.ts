import { DEMO_PLACES, GUANGDONG } from './storyline.js';

/** The webhook paths of the demo's subscribers on the demo's webhook sink. */
export const DISPATCH_PATH = '/dispatch';
export const TYPHOON_DESK_PATH = '/typhoon-desk';

/**
 * The demo's subscribers, as a seed document (docs/subscribers.md) applied by the seed code itself,
 * names resolved through the simulator's city lookup like any seed file. Each one shows a
 * different part of the filters.
 */
/** Local "HH:MM:SS" in Asia/Shanghai (UTC+8 all year), the night shift's zone. */
export const shanghaiClock = (at: Date): string =>
  new Date(at.getTime() + 8 * 3600_000).toISOString().slice(11, 19);

export const NIGHT_SHIFT_EMAIL = 'night-shift@zhanjiang.example';

export function demoSeedDocument(options: {
  webhookUrl: (path: string) => string;
  dispatchSecret: string;
  typhoonDeskSecret: string;
  /**
   * The night shift's quiet hours, from the demo's clock: a window that is on while the story
   * plays and ends soon after, so the demo shows a hold and its release within a minute.
   */
  quietHours: { from: Date; to: Date };
  /** The demo's WeCom group robot (src/demo/robot-sink.ts). */
  wecomRobotUrl?: string;
}): { subscribers: Record<string, unknown>[] } {
  const allPlaces = Object.values(DEMO_PLACES).map((p) => p.id);
  return {
    subscribers: [
      {
        name: '杭州 duty desk',
        email: 'duty-desk@hangzhou.example',
        lang: 'zh',
        locations: [DEMO_PLACES.hangzhou.name],
      },
      {
        name: 'Guangdong operations (orange and above)',
        email: 'ops@guangdong.example',
        lang: 'en',
        // Names with their province, as an admin would write them.
        locations: GUANGDONG.map((p) => ({ query: p.name, adm: '广东' })),
        minLevel: '橙色',
      },
      {
        // Quiet hours on while the story plays: blue to orange wait for the end of the window,
        // the red typhoon warning goes at once and takes its chain along, and so does its cancel.
        name: 'Zhanjiang night shift (quiet hours, red goes at once)',
        email: NIGHT_SHIFT_EMAIL,
        lang: 'en',
        locations: [DEMO_PLACES.zhanjiang.name, DEMO_PLACES.zhuhai.name],
        timezone: 'Asia/Shanghai',
        quietHours: {
          from: shanghaiClock(options.quietHours.from),
          to: shanghaiClock(options.quietHours.to),
          bypassLevel: '红色',
        },
      },
      {
        name: 'Dispatch system',
        webhook: options.webhookUrl(DISPATCH_PATH),
        secret: options.dispatchSecret,
        locations: allPlaces,
      },
      {
        name: 'Typhoon desk (typhoons only)',
        webhook: options.webhookUrl(TYPHOON_DESK_PATH),
        secret: options.typhoonDeskSecret,
        locations: allPlaces,
        // The rainstorm in 杭州 is filtered out for this one.
        types: ['台风'],
      },
      ...(options.wecomRobotUrl
        ? [
            {
              name: '广东值班群 (WeCom robot)',
              wecom: options.wecomRobotUrl,
              locations: GUANGDONG.map((p) => ({ query: p.name, adm: '广东' })),
            },
          ]
        : []),
    ],
  };
}
