/**
 * Wire bodies shaped like the spec's and the facts note's samples, quirks included. Values are
 * strings, as in the published samples.
 */

export const cityLookupBody = {
  // The spec's city-lookup sample carries `status` where the table says `code`.
  status: '200',
  location: [
    {
      name: '杭州',
      id: '101210101',
      lat: '30.28746',
      lon: '120.15358',
      adm2: '杭州',
      adm1: '浙江省',
      country: '中国',
      tz: 'Asia/Shanghai',
      utcOffset: '+08:00',
      isDst: '0',
      type: 'city',
      rank: '11',
      fxLink: 'https://www.qweather.com/weather/hangzhou-101210101.html',
    },
  ],
  refer: { sources: ['QWeather'], license: ['QWeather Developers License'] },
};

export const topCitiesBody = {
  code: '200',
  topCityList: [
    {
      name: '北京',
      id: '101010100',
      lat: '39.90499',
      lon: '116.40529',
      adm2: '北京',
      adm1: '北京市',
      // The popular-city sample names the country field `cnty`.
      cnty: '中国',
      tz: 'Asia/Shanghai',
      utcOffset: '+08:00',
      isDst: '0',
      type: 'city',
      rank: '10',
      fxLink: 'https://www.qweather.com/weather/beijing-101010100.html',
    },
    {
      name: 'New York',
      id: '5128581',
      lat: 40.71427,
      lon: -74.00597,
      adm2: 'New York',
      adm1: 'New York',
      country: 'United States of America',
      tz: 'America/New_York',
      utcOffset: '-04:00',
      isDst: '1',
      type: 'city',
      rank: 15,
      fxLink: '',
    },
  ],
};

export const poiBody = {
  code: '200',
  poi: [
    {
      name: '西湖',
      id: '10121010101A',
      lat: '30.24',
      lon: '120.14',
      adm2: '杭州',
      adm1: '浙江',
      country: '中国',
      tz: 'Asia/Shanghai',
      utcOffset: '+08:00',
      isDst: '0',
      type: 'scenic',
      rank: '67',
      fxLink: 'https://www.qweather.com',
    },
  ],
};

/** The spec's warning sample: a type name in `type`, localized status, no sender/typeName/related. */
export const v7SampleWarning = {
  id: '10101010020230612080000000',
  pubTime: '2023-06-12T08:00+08:00',
  title: '北京市气象台发布高温黄色预警',
  startTime: '',
  endTime: '2023-06-13T08:00',
  status: '预警中',
  level: '黄色',
  type: '高温',
  text: '北京市气象台6月12日8时发布高温黄色预警信号。',
};

/** An older v7 record: level filled, type a code. */
export const v7OldWarning = {
  id: '10121010120230712090000001',
  sender: '杭州市气象台',
  pubTime: '2023-07-12T09:00+08:00',
  title: '杭州市气象台发布暴雨橙色预警[Ⅱ级/严重]',
  startTime: '2023-07-12T09:00+08:00',
  endTime: '2023-07-13T09:00+08:00',
  status: 'update',
  level: '橙色',
  type: '1003',
  typeName: '暴雨',
  urgency: '',
  certainty: '',
  text: '杭州市气象台2023年07月12日09时00分发布暴雨橙色预警信号。',
  related: '10121010120230712060000001',
};

/** A newer v7 record: `level` empty, severity and severityColor set. */
export const v7NewWarning = {
  id: '10121010120250801120000002',
  sender: '杭州市气象台',
  pubTime: '2025-08-01T12:00+08:00',
  title: '杭州市气象台发布大风蓝色预警信号',
  startTime: '2025-08-01T12:00+08:00',
  endTime: '2025-08-02T12:00+08:00',
  status: 'active',
  level: '',
  severity: 'Minor',
  severityColor: 'Blue',
  type: '1006',
  typeName: '大风',
  urgency: '',
  certainty: '',
  text: '预计未来24小时内可能受大风影响。',
  related: '',
};

export const warningNowBody = (warnings: unknown[]) => ({
  code: '200',
  updateTime: '2025-08-01T12:05+08:00',
  fxLink: 'https://www.qweather.com/severe-weather/hangzhou-101210101.html',
  warning: warnings,
  refer: { sources: ['12379'], license: ['QWeather Developers License'] },
});

export const warningListBody = {
  code: '200',
  updateTime: '2025-08-01T04:05+00:00',
  warningLocList: [{ locationId: '101210101' }, { locationId: '101010100' }],
  refer: { sources: ['12379'], license: ['QWeather Developers License'] },
};

/** The facts note's v1 body. */
export const v1Alert = {
  id: 'fe6ff12e7ae8cc7a3e1f01c5eea2f5d5',
  senderName: '上海中心气象台',
  issuedTime: '2025-10-24T11:19+08:00',
  messageType: { code: 'update', supersedes: ['a61b6a2ea7df1a8c41e5d1c6d8a8b8c1'] },
  eventType: { name: '大风', code: '1006' },
  urgency: null,
  severity: 'minor',
  certainty: null,
  icon: '1006',
  color: { code: 'blue', red: 30, green: 50, blue: 205, alpha: 1 },
  effectiveTime: '2025-10-24T11:19+08:00',
  onsetTime: '2025-10-24T11:19+08:00',
  expireTime: '2025-10-25T11:19+08:00',
  headline: '上海中心气象台发布大风蓝色预警',
  description: '受冷空气影响，预计本市将出现6级以上大风。',
  criteria: '24小时内可能受大风影响，平均风力可达6级以上',
  responseTypes: [],
  instruction: '注意防风。',
};

export const weatherAlertBody = (alerts: unknown[]) => ({
  metadata: {
    tag: '2b1a5c0e',
    zeroResult: alerts.length === 0,
    attributions: ['https://developer.qweather.com/attribution.html'],
  },
  alerts,
});
