/**
 * QWeather's warning types (its public "alert events" list, codes 1001–1086 as of 2026), with
 * the Chinese names the upstream uses and English names: what a subscriber may write in
 * `types` (README, promises), and what an English message calls a type the upstream named only in
 * Chinese. Records are never required to carry a known code: the upstream adds types without
 * notice (notes: "never require a code to be known").
 */

// prettier-ignore
const TYPES: ReadonlyArray<readonly [code: string, zh: string, en: string]> = [
  ['1001', '台风', 'Typhoon'],
  ['1002', '龙卷风', 'Tornado'],
  ['1003', '暴雨', 'Rainstorm'],
  ['1004', '暴雪', 'Snowstorm'],
  ['1005', '寒潮', 'Cold Wave'],
  ['1006', '大风', 'Gale'],
  ['1007', '沙尘暴', 'Sandstorm'],
  ['1008', '低温冻害', 'Low Temperature Freeze'],
  ['1009', '高温', 'High Temperature'],
  ['1010', '热浪', 'Heat Wave'],
  ['1011', '干热风', 'Dry Hot Wind'],
  ['1012', '下击暴流', 'Downburst'],
  ['1013', '雪崩', 'Avalanche'],
  ['1014', '雷电', 'Lightning'],
  ['1015', '冰雹', 'Hail'],
  ['1016', '霜冻', 'Frost'],
  ['1017', '大雾', 'Heavy Fog'],
  ['1018', '低空风切变', 'Low-Level Wind Shear'],
  ['1019', '霾', 'Haze'],
  ['1020', '雷雨大风', 'Thunder Gust'],
  ['1021', '道路结冰', 'Road Icing'],
  ['1022', '干旱', 'Drought'],
  ['1023', '海上大风', 'Gale at Sea'],
  ['1024', '高温中暑', 'Heat Stroke'],
  ['1025', '森林火险', 'Forest Fire Danger'],
  ['1026', '草原火险', 'Grassland Fire Danger'],
  ['1027', '冰冻', 'Freeze'],
  ['1028', '空间天气', 'Space Weather'],
  ['1029', '重污染', 'Heavy Air Pollution'],
  ['1030', '低温雨雪冰冻', 'Low Temperature Rain and Snow'],
  ['1031', '强对流', 'Strong Convection'],
  ['1032', '臭氧', 'Ozone'],
  ['1033', '大雪', 'Heavy Snow'],
  ['1034', '寒冷', 'Cold'],
  ['1035', '连阴雨', 'Continuous Rain'],
  ['1036', '渍涝风险', 'Waterlogging'],
  ['1037', '地质灾害', 'Geological Hazard'],
  ['1038', '强降雨', 'Heavy Rainfall'],
  ['1039', '强降温', 'Sharp Drop in Temperature'],
  ['1040', '雪灾', 'Snow Disaster'],
  ['1041', '森林(草原)火险', 'Forest and Grassland Fire Danger'],
  ['1042', '医疗气象', 'Medical Meteorology'],
  ['1043', '雷暴', 'Thunderstorm'],
  ['1044', '停课信号', 'School Closure'],
  ['1045', '停工信号', 'Work Stoppage'],
  ['1046', '海上风险', 'Maritime Risk'],
  ['1047', '春季沙尘天气', 'Spring Dust'],
  ['1048', '降温', 'Falling Temperature'],
  ['1049', '台风暴雨', 'Typhoon Rainstorm'],
  ['1050', '严寒', 'Severe Cold'],
  ['1051', '沙尘', 'Sand and Dust'],
  ['1052', '海上雷雨大风', 'Thunder Gust at Sea'],
  ['1053', '海上大雾', 'Fog at Sea'],
  ['1054', '海上雷电', 'Lightning at Sea'],
  ['1055', '海上台风', 'Typhoon at Sea'],
  ['1056', '低温', 'Low Temperature'],
  ['1057', '道路冰雪', 'Road Snow and Ice'],
  ['1058', '雷暴大风', 'Thunderstorm Gale'],
  ['1059', '持续低温', 'Persistent Low Temperature'],
  ['1060', '能见度不良', 'Poor Visibility'],
  ['1061', '浓浮尘', 'Dense Floating Dust'],
  ['1062', '海区大风', 'Gale in Sea Areas'],
  ['1063', '短历时强降水', 'Short-Duration Heavy Precipitation'],
  ['1064', '短时强降雨', 'Short-Time Heavy Rain'],
  ['1065', '海区大雾', 'Fog in Sea Areas'],
  ['1066', '中暑气象条件', 'Heat Stroke Weather Conditions'],
  ['1067', '重污染天气', 'Heavy Pollution Weather'],
  ['1068', '一氧化碳中毒气象条件', 'Carbon Monoxide Poisoning Weather Conditions'],
  ['1069', '感冒等呼吸道疾病气象条件', 'Respiratory Illness Weather Conditions'],
  ['1071', '腹泻等肠道疾病气象条件', 'Intestinal Illness Weather Conditions'],
  ['1072', '心脑血管疾病气象条件', 'Cardiovascular Illness Weather Conditions'],
  ['1073', '洪涝灾害气象风险', 'Flood Disaster Weather Risk'],
  ['1074', '重污染气象条件', 'Heavy Pollution Weather Conditions'],
  ['1075', '城市内涝气象风险', 'Urban Waterlogging Weather Risk'],
  ['1076', '洪水灾害气象风险', 'Flood Weather Risk'],
  ['1077', '森林火险气象风险', 'Forest Fire Weather Risk'],
  ['1078', '气象干旱', 'Meteorological Drought'],
  ['1079', '农业气象风险', 'Agricultural Weather Risk'],
  ['1080', '强季风', 'Strong Monsoon'],
  ['1081', '电线积冰', 'Wire Icing'],
  ['1082', '脑卒中气象风险', 'Stroke Weather Risk'],
  ['1084', '森林(草原)火灾气象风险', 'Forest and Grassland Fire Weather Risk'],
  ['1085', '雷雨强风', 'Thunderstorm Strong Wind'],
  ['1086', '低温凝冻', 'Low Temperature Freezing'],
];

export interface WarningType {
  readonly code: string;
  readonly zh: string;
  readonly en: string;
}

export const WARNING_TYPES: readonly WarningType[] = Object.freeze(
  TYPES.map(([code, zh, en]) => Object.freeze({ code, zh, en })),
);

/** Names compare without spaces, dashes, brackets of either width, or case. */
function nameKey(name: string): string {
  return name
    .normalize('NFKC')
    .toLowerCase()
    .replace(/[\s\-_()（）]+/g, '');
}

const BY_CODE = new Map(WARNING_TYPES.map((t) => [t.code, t]));
const BY_NAME = new Map<string, WarningType>();
for (const t of WARNING_TYPES) {
  BY_NAME.set(nameKey(t.zh), t);
  BY_NAME.set(nameKey(t.en), t);
}
// Names seen in the field and in older lists for the same types.
for (const [alias, code] of [
  ['暴雪', '1004'],
  ['snow storm', '1004'],
  ['dry hot winds', '1011'],
  ['wildfire', '1025'],
  ['grassland fire', '1026'],
  ['浓浮沉', '1061'],
] as const) {
  BY_NAME.set(nameKey(alias), BY_CODE.get(code)!);
}

/**
 * A type code in today's style: old records used 11B01…11B99 for what is now 1001…1099
 * (11B03 暴雨 = 1003). Any other text is kept as written, upper-cased.
 */
export function canonicalTypeCode(code: string): string {
  const trimmed = code.trim().toUpperCase();
  const oldStyle = /^11B(\d{2})$/.exec(trimmed);
  return oldStyle ? `10${oldStyle[1]}` : trimmed;
}

/** The type a code (either style) or a Chinese or English name stands for; undefined if none. */
export function warningTypeOf(text: string): WarningType | undefined {
  return BY_CODE.get(canonicalTypeCode(text)) ?? BY_NAME.get(nameKey(text));
}

/**
 * A subscriber's `types` entry as stored: the code of a known type, any other four-digit code
 * as given (QWeather adds codes without notice), else undefined (refused: a misspelt name
 * would match nothing, and the subscriber would never hear of that type).
 */
export function typeCodeOfInput(text: string): string | undefined {
  const known = warningTypeOf(text);
  if (known) return known.code;
  const code = canonicalTypeCode(text);
  return /^\d{4}$/.test(code) ? code : undefined;
}

/** The English name of a warning's type, from its code or its Chinese name; null if unknown. */
export function englishTypeName(warning: {
  typeCode: string | null;
  typeName: string | null;
}): string | null {
  const known =
    (warning.typeCode ? warningTypeOf(warning.typeCode) : undefined) ??
    (warning.typeName ? warningTypeOf(warning.typeName) : undefined);
  return known?.en ?? null;
}
