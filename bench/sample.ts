import type { Notification } from '../src/domain/render.js';

/** A notification shaped like the storm's, so bodies and emails have the real size. */
export function sampleNotification(deliveryId: string): Notification {
  return {
    deliveryId,
    eventType: 'new',
    occurredAt: new Date(),
    location: { id: '101210101', name: '杭州', tz: 'Asia/Shanghai' },
    warning: {
      id: '10121010120260701080000001',
      source: 'v7',
      title: '杭州市气象台发布暴雨橙色预警[Ⅱ级/严重]',
      sender: '杭州市气象台',
      pubTime: '2026-07-01T08:00+08:00',
      startTime: '2026-07-01T08:00+08:00',
      endTime: '2026-07-02T08:00+08:00',
      status: 'active',
      level: '橙色',
      severity: 'severe',
      color: 'orange',
      typeCode: '1003',
      typeName: '暴雨',
      text: '杭州市气象台2026年07月01日08时00分发布暴雨橙色预警信号：预计未来24小时内杭州将受暴雨影响，请注意防范。',
      related: [],
      instruction: null,
      raw: null,
    },
    supersedes: [],
    attribution: '天气数据来源：和风天气 QWeather',
    lang: 'zh',
  };
}
