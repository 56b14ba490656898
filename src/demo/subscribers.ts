import { DEMO_PLACES, GUANGDONG } from './storyline.js';

/** The webhook paths of the demo's subscribers on the demo's webhook sink. */
export const DISPATCH_PATH = '/dispatch';
export const TYPHOON_DESK_PATH = '/typhoon-desk';

/**
 * The demo's subscribers, as a seed document (INTERFACE §3) applied by the seed code itself,
 * names resolved through the simulator's city lookup like any seed file. Each one shows a
 * different part of the filters.
 */
export function demoSeedDocument(options: {
  webhookUrl: (path: string) => string;
  dispatchSecret: string;
  typhoonDeskSecret: string;
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
