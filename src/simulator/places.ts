/**
 * The simulator's places: a built-in table of a few dozen real places and scenic spots (values
 * copied row by row from QWeather's public lists in ../shared/data/qweather; attribution:
 * QWeather / heweather.com), and the shapes `loadPlacesFromCsv` produces for the full lists.
 *
 * The lists carry no rank, so ranks here are invented: a higher number is a more prominent place
 * (bigger cities higher), and results are ordered by rank descending.
 */

export interface PlaceRow {
  readonly id: string;
  readonly name: string;
  readonly nameEn: string;
  /** ISO 3166-1 alpha-2 code, upper case as in the list (CN, HK, MO, TW). */
  readonly iso: string;
  readonly country: string;
  readonly countryEn: string;
  readonly adm1: string;
  readonly adm1En: string;
  readonly adm2: string;
  readonly adm2En: string;
  readonly tz: string;
  readonly lat: number;
  readonly lon: number;
  /** ADCode (Chinese places); empty when unknown. */
  readonly adcode: string;
  readonly rank: number;
}

export interface PoiRow {
  readonly id: string;
  readonly name: string;
  readonly nameEn: string;
  readonly lat: number;
  readonly lon: number;
  readonly iso: string;
  readonly country: string;
  readonly countryEn: string;
  /** Location ID of the place the POI lies in. */
  readonly locationId: string;
  readonly adm1: string;
  readonly adm1En: string;
  readonly adm2: string;
  readonly adm2En: string;
  readonly rank: number;
}

export interface PlaceData {
  readonly places: readonly PlaceRow[];
  readonly pois: readonly PoiRow[];
}

/** The built-in table: used unless `--places DIR` loads the full lists. */
export function builtinPlaces(): PlaceData {
  return { places: BUILTIN_PLACE_ROWS, pois: BUILTIN_POI_ROWS };
}

// prettier-ignore
export const BUILTIN_PLACE_ROWS: readonly PlaceRow[] = [
  { id: '101010100', nameEn: 'Beijing', name: '北京', iso: 'CN', countryEn: 'China', country: '中国', adm1En: 'Beijing', adm1: '北京市', adm2En: 'Beijing', adm2: '北京市', tz: 'Asia/Shanghai', lat: 39.905, lon: 116.4053, adcode: '110000', rank: 100 },
  { id: '101020100', nameEn: 'Shanghai', name: '上海', iso: 'CN', countryEn: 'China', country: '中国', adm1En: 'Shanghai', adm1: '上海市', adm2En: 'Shanghai', adm2: '上海市', tz: 'Asia/Shanghai', lat: 31.2317, lon: 121.4726, adcode: '310000', rank: 99 },
  { id: '101280101', nameEn: 'Guangzhou', name: '广州', iso: 'CN', countryEn: 'China', country: '中国', adm1En: 'Guangdong', adm1: '广东省', adm2En: 'Guangzhou', adm2: '广州市', tz: 'Asia/Shanghai', lat: 23.1252, lon: 113.2806, adcode: '440100', rank: 96 },
  { id: '101280601', nameEn: 'Shenzhen', name: '深圳', iso: 'CN', countryEn: 'China', country: '中国', adm1En: 'Guangdong', adm1: '广东省', adm2En: 'Shenzhen', adm2: '深圳市', tz: 'Asia/Shanghai', lat: 22.547, lon: 114.0859, adcode: '440300', rank: 95 },
  { id: '101210101', nameEn: 'Hangzhou', name: '杭州', iso: 'CN', countryEn: 'China', country: '中国', adm1En: 'Zhejiang', adm1: '浙江省', adm2En: 'Hangzhou', adm2: '杭州市', tz: 'Asia/Shanghai', lat: 30.246, lon: 120.2108, adcode: '330100', rank: 93 },
  { id: '101320101', nameEn: 'Hong Kong', name: '香港', iso: 'HK', countryEn: 'Hong Kong SAR', country: '香港特别行政区', adm1En: 'Hong Kong SAR', adm1: '香港特别行政区', adm2En: 'Hong Kong SAR', adm2: '香港特别行政区', tz: 'Asia/Hong_Kong', lat: 22.307, lon: 114.177, adcode: '810000', rank: 92 },
  { id: '101270101', nameEn: 'Chengdu', name: '成都', iso: 'CN', countryEn: 'China', country: '中国', adm1En: 'Sichuan', adm1: '四川省', adm2En: 'Chengdu', adm2: '成都市', tz: 'Asia/Shanghai', lat: 30.573, lon: 104.0663, adcode: '510100', rank: 91 },
  { id: '101040100', nameEn: 'Chongqing', name: '重庆', iso: 'CN', countryEn: 'China', country: '中国', adm1En: 'Chongqing', adm1: '重庆市', adm2En: 'Chongqing', adm2: '重庆市', tz: 'Asia/Shanghai', lat: 29.5638, lon: 106.5505, adcode: '500000', rank: 90 },
  { id: '101200101', nameEn: 'Wuhan', name: '武汉', iso: 'CN', countryEn: 'China', country: '中国', adm1En: 'Hubei', adm1: '湖北省', adm2En: 'Wuhan', adm2: '武汉市', tz: 'Asia/Shanghai', lat: 30.5844, lon: 114.2986, adcode: '420100', rank: 89 },
  { id: '101030100', nameEn: 'Tianjin', name: '天津', iso: 'CN', countryEn: 'China', country: '中国', adm1En: 'Tianjin', adm1: '天津市', adm2En: 'Tianjin', adm2: '天津市', tz: 'Asia/Shanghai', lat: 39.1256, lon: 117.1902, adcode: '120000', rank: 88 },
  { id: '101190101', nameEn: 'Nanjing', name: '南京', iso: 'CN', countryEn: 'China', country: '中国', adm1En: 'Jiangsu', adm1: '江苏省', adm2En: 'Nanjing', adm2: '南京市', tz: 'Asia/Shanghai', lat: 32.0415, lon: 118.7674, adcode: '320100', rank: 88 },
  { id: '101110101', nameEn: "Xi'an", name: '西安', iso: 'CN', countryEn: 'China', country: '中国', adm1En: 'Shaanxi', adm1: '陕西省', adm2En: "Xi'an", adm2: '西安市', tz: 'Asia/Shanghai', lat: 34.3432, lon: 108.9397, adcode: '610100', rank: 87 },
  { id: '101230201', nameEn: 'Xiamen', name: '厦门', iso: 'CN', countryEn: 'China', country: '中国', adm1En: 'Fujian', adm1: '福建省', adm2En: 'Xiamen', adm2: '厦门市', tz: 'Asia/Shanghai', lat: 24.4905, lon: 118.1102, adcode: '350200', rank: 82 },
  { id: '101210401', nameEn: 'Ningbo', name: '宁波', iso: 'CN', countryEn: 'China', country: '中国', adm1En: 'Zhejiang', adm1: '浙江省', adm2En: 'Ningbo', adm2: '宁波市', tz: 'Asia/Shanghai', lat: 29.8603, lon: 121.6245, adcode: '330200', rank: 81 },
  { id: '101120201', nameEn: 'Qingdao', name: '青岛', iso: 'CN', countryEn: 'China', country: '中国', adm1En: 'Shandong', adm1: '山东省', adm2En: 'Qingdao', adm2: '青岛市', tz: 'Asia/Shanghai', lat: 36.083, lon: 120.3552, adcode: '370200', rank: 80 },
  { id: '101230101', nameEn: 'Fuzhou', name: '福州', iso: 'CN', countryEn: 'China', country: '中国', adm1En: 'Fujian', adm1: '福建省', adm2En: 'Fuzhou', adm2: '福州市', tz: 'Asia/Shanghai', lat: 26.0753, lon: 119.3062, adcode: '350100', rank: 80 },
  { id: '101070101', nameEn: 'Shenyang', name: '沈阳', iso: 'CN', countryEn: 'China', country: '中国', adm1En: 'Liaoning', adm1: '辽宁省', adm2En: 'Shenyang', adm2: '沈阳市', tz: 'Asia/Shanghai', lat: 41.6776, lon: 123.4647, adcode: '210100', rank: 79 },
  { id: '101120101', nameEn: 'Jinan', name: '济南', iso: 'CN', countryEn: 'China', country: '中国', adm1En: 'Shandong', adm1: '山东省', adm2En: 'Jinan', adm2: '济南市', tz: 'Asia/Shanghai', lat: 36.6521, lon: 117.1201, adcode: '370100', rank: 78 },
  { id: '101050101', nameEn: 'Harbin', name: '哈尔滨', iso: 'CN', countryEn: 'China', country: '中国', adm1En: 'Heilongjiang', adm1: '黑龙江省', adm2En: 'Harbin', adm2: '哈尔滨市', tz: 'Asia/Shanghai', lat: 45.803, lon: 126.5351, adcode: '230100', rank: 77 },
  { id: '101210701', nameEn: 'Wenzhou', name: '温州', iso: 'CN', countryEn: 'China', country: '中国', adm1En: 'Zhejiang', adm1: '浙江省', adm2En: 'Wenzhou', adm2: '温州市', tz: 'Asia/Shanghai', lat: 28.0006, lon: 120.6721, adcode: '330300', rank: 76 },
  { id: '101330101', nameEn: 'Macao', name: '澳门', iso: 'MO', countryEn: 'Macao SAR', country: '澳门特别行政区', adm1En: 'Macao SAR', adm1: '澳门特别行政区', adm2En: 'Macao SAR', adm2: '澳门特别行政区', tz: 'Asia/Macau', lat: 22.202, lon: 113.544, adcode: '820000', rank: 75 },
  { id: '101060101', nameEn: 'Changchun', name: '长春', iso: 'CN', countryEn: 'China', country: '中国', adm1En: 'Jilin', adm1: '吉林省', adm2En: 'Changchun', adm2: '长春市', tz: 'Asia/Shanghai', lat: 43.817, lon: 125.3236, adcode: '220100', rank: 74 },
  { id: '101090101', nameEn: 'Shijiazhuang', name: '石家庄', iso: 'CN', countryEn: 'China', country: '中国', adm1En: 'Hebei', adm1: '河北省', adm2En: 'Shijiazhuang', adm2: '石家庄市', tz: 'Asia/Shanghai', lat: 38.0455, lon: 114.5025, adcode: '130100', rank: 74 },
  { id: '101310201', nameEn: 'Sanya', name: '三亚', iso: 'CN', countryEn: 'China', country: '中国', adm1En: 'Hainan', adm1: '海南省', adm2En: 'Sanya', adm2: '三亚市', tz: 'Asia/Shanghai', lat: 18.2479, lon: 109.5083, adcode: '460200', rank: 73 },
  { id: '101280701', nameEn: 'Zhuhai', name: '珠海', iso: 'CN', countryEn: 'China', country: '中国', adm1En: 'Guangdong', adm1: '广东省', adm2En: 'Zhuhai', adm2: '珠海市', tz: 'Asia/Shanghai', lat: 22.2716, lon: 113.5769, adcode: '440400', rank: 72 },
  { id: '101310101', nameEn: 'Haikou', name: '海口', iso: 'CN', countryEn: 'China', country: '中国', adm1En: 'Hainan', adm1: '海南省', adm2En: 'Haikou', adm2: '海口市', tz: 'Asia/Shanghai', lat: 20.0458, lon: 110.1984, adcode: '460100', rank: 72 },
  { id: '101130101', nameEn: 'Urumqi', name: '乌鲁木齐', iso: 'CN', countryEn: 'China', country: '中国', adm1En: 'Xinjiang Uygur Autonomous Region', adm1: '新疆维吾尔自治区', adm2En: 'Urumqi', adm2: '乌鲁木齐市', tz: 'Asia/Shanghai', lat: 43.7928, lon: 87.6177, adcode: '650100', rank: 70 },
  { id: '101160101', nameEn: 'Lanzhou', name: '兰州', iso: 'CN', countryEn: 'China', country: '中国', adm1En: 'Gansu', adm1: '甘肃省', adm2En: 'Lanzhou', adm2: '兰州市', tz: 'Asia/Shanghai', lat: 36.058, lon: 103.8236, adcode: '620100', rank: 70 },
  { id: '101140101', nameEn: 'Lhasa', name: '拉萨', iso: 'CN', countryEn: 'China', country: '中国', adm1En: 'Tibet Autonomous Region', adm1: '西藏自治区', adm2En: 'Lhasa', adm2: '拉萨市', tz: 'Asia/Shanghai', lat: 29.6604, lon: 91.1322, adcode: '540100', rank: 68 },
  { id: '101280501', nameEn: 'Shantou', name: '汕头', iso: 'CN', countryEn: 'China', country: '中国', adm1En: 'Guangdong', adm1: '广东省', adm2En: 'Shantou', adm2: '汕头市', tz: 'Asia/Shanghai', lat: 23.371, lon: 116.7085, adcode: '440500', rank: 68 },
  { id: '101080101', nameEn: 'Hohhot', name: '呼和浩特', iso: 'CN', countryEn: 'China', country: '中国', adm1En: 'Inner Mongolia Autonomous Region', adm1: '内蒙古自治区', adm2En: 'Hohhot', adm2: '呼和浩特市', tz: 'Asia/Shanghai', lat: 40.8421, lon: 111.7488, adcode: '150100', rank: 66 },
  { id: '101281001', nameEn: 'Zhanjiang', name: '湛江', iso: 'CN', countryEn: 'China', country: '中国', adm1En: 'Guangdong', adm1: '广东省', adm2En: 'Zhanjiang', adm2: '湛江市', tz: 'Asia/Shanghai', lat: 21.2749, lon: 110.365, adcode: '440800', rank: 66 },
  { id: '101150101', nameEn: 'Xining', name: '西宁', iso: 'CN', countryEn: 'China', country: '中国', adm1En: 'Qinghai', adm1: '青海省', adm2En: 'Xining', adm2: '西宁市', tz: 'Asia/Shanghai', lat: 36.6232, lon: 101.7789, adcode: '630100', rank: 64 },
  { id: '101281801', nameEn: 'Yangjiang', name: '阳江', iso: 'CN', countryEn: 'China', country: '中国', adm1En: 'Guangdong', adm1: '广东省', adm2En: 'Yangjiang', adm2: '阳江市', tz: 'Asia/Shanghai', lat: 21.8592, lon: 111.9751, adcode: '441700', rank: 55 },
  { id: '101282001', nameEn: 'Maoming', name: '茂名', iso: 'CN', countryEn: 'China', country: '中国', adm1En: 'Guangdong', adm1: '广东省', adm2En: 'Maoming', adm2: '茂名市', tz: 'Asia/Shanghai', lat: 21.6598, lon: 110.9192, adcode: '440900', rank: 55 },
  { id: '101010200', nameEn: 'Haidian', name: '海淀', iso: 'CN', countryEn: 'China', country: '中国', adm1En: 'Beijing', adm1: '北京市', adm2En: 'Beijing', adm2: '北京市', tz: 'Asia/Shanghai', lat: 39.9561, lon: 116.3103, adcode: '110108', rank: 52 },
  { id: '101010300', nameEn: 'Chaoyang', name: '朝阳', iso: 'CN', countryEn: 'China', country: '中国', adm1En: 'Beijing', adm1: '北京市', adm2En: 'Beijing', adm2: '北京市', tz: 'Asia/Shanghai', lat: 39.9215, lon: 116.4864, adcode: '110105', rank: 52 },
  { id: '101210102', nameEn: 'Xiaoshan', name: '萧山', iso: 'CN', countryEn: 'China', country: '中国', adm1En: 'Zhejiang', adm1: '浙江省', adm2En: 'Hangzhou', adm2: '杭州市', tz: 'Asia/Shanghai', lat: 30.1629, lon: 120.2707, adcode: '330109', rank: 50 },
  { id: '101210106', nameEn: 'Yuhang', name: '余杭', iso: 'CN', countryEn: 'China', country: '中国', adm1En: 'Zhejiang', adm1: '浙江省', adm2En: 'Hangzhou', adm2: '杭州市', tz: 'Asia/Shanghai', lat: 30.2737, lon: 119.9787, adcode: '330110', rank: 48 },
  { id: '101210113', nameEn: 'Xihu', name: '西湖', iso: 'CN', countryEn: 'China', country: '中国', adm1En: 'Zhejiang', adm1: '浙江省', adm2En: 'Hangzhou', adm2: '杭州市', tz: 'Asia/Shanghai', lat: 30.2729, lon: 120.1474, adcode: '330106', rank: 45 },
  { id: '101071201', nameEn: 'Chaoyang', name: '朝阳', iso: 'CN', countryEn: 'China', country: '中国', adm1En: 'Liaoning', adm1: '辽宁省', adm2En: 'Chaoyang', adm2: '朝阳市', tz: 'Asia/Shanghai', lat: 41.5768, lon: 120.4512, adcode: '211300', rank: 42 },
];

// prettier-ignore
export const BUILTIN_POI_ROWS: readonly PoiRow[] = [
  { id: '10114010104A', nameEn: 'Potala Palace', name: '布达拉宫', lat: 29.65, lon: 91.11, iso: 'CN', countryEn: 'China', country: '中国', locationId: '101140101', adm1En: 'Xizang', adm1: '西藏', adm2En: 'Lasa', adm2: '拉萨', rank: 94 },
  { id: '10102010007A', nameEn: 'Oriental Peal Radio & TV Tower', name: '东方明珠塔', lat: 31.23, lon: 121.49, iso: 'CN', countryEn: 'China', country: '中国', locationId: '101020100', adm1En: 'Shanghai', adm1: '上海', adm2En: 'Shanghai', adm2: '上海', rank: 92 },
  { id: '10101010010A', nameEn: 'Beihai Park', name: '北海公园', lat: 39.92, lon: 116.38, iso: 'CN', countryEn: 'China', country: '中国', locationId: '101010100', adm1En: 'Beijing', adm1: '北京', adm2En: 'Beijing', adm2: '北京', rank: 82 },
  { id: '10123020112A', nameEn: 'Kulangsu', name: '鼓浪屿', lat: 24.44, lon: 118.06, iso: 'CN', countryEn: 'China', country: '中国', locationId: '101230201', adm1En: 'Fujian', adm1: '福建', adm2En: 'Xiamen', adm2: '厦门', rank: 90 },
  { id: '10128060104A', nameEn: 'Xianhu Botanical Garden', name: '仙湖植物园', lat: 22.57, lon: 114.17, iso: 'CN', countryEn: 'China', country: '中国', locationId: '101280601', adm1En: 'Guangdong', adm1: '广东', adm2En: 'Shenzhen', adm2: '深圳', rank: 72 },
  { id: '10127010108A', nameEn: 'Du Fu Thatched Cottage', name: '杜甫草堂', lat: 30.65, lon: 104.02, iso: 'CN', countryEn: 'China', country: '中国', locationId: '101270101', adm1En: 'Sichuan', adm1: '四川', adm2En: 'Chengdu', adm2: '成都', rank: 83 },
  { id: '10128010109A', nameEn: 'Chimelong Tourist Resort', name: '长隆旅游度假区', lat: 23.0, lon: 113.33, iso: 'CN', countryEn: 'China', country: '中国', locationId: '101280101', adm1En: 'Guangdong', adm1: '广东', adm2En: 'Guangzhou', adm2: '广州', rank: 86 },
  { id: '10101030011A', nameEn: 'Beijing Olympic Park', name: '北京奥林匹克公园', lat: 39.99, lon: 116.39, iso: 'CN', countryEn: 'China', country: '中国', locationId: '101010300', adm1En: 'Beijing', adm1: '北京', adm2En: 'Beijing', adm2: '北京', rank: 88 },
  { id: '10102010011A', nameEn: 'Shanghai Museum', name: '上海博物馆', lat: 31.22, lon: 121.47, iso: 'CN', countryEn: 'China', country: '中国', locationId: '101020100', adm1En: 'Shanghai', adm1: '上海', adm2En: 'Shanghai', adm2: '上海', rank: 84 },
  { id: '10111010116A', nameEn: 'Tang Paradise', name: '大唐芙蓉园', lat: 34.21, lon: 108.97, iso: 'CN', countryEn: 'China', country: '中国', locationId: '101110101', adm1En: 'Shaanxi', adm1: '陕西', adm2En: 'Xian', adm2: '西安', rank: 78 },
  { id: '10121010104A', nameEn: 'Leifeng Pagoda', name: '雷峰塔', lat: 30.23, lon: 120.14, iso: 'CN', countryEn: 'China', country: '中国', locationId: '101210101', adm1En: 'Zhejiang', adm1: '浙江', adm2En: 'Hangzhou', adm2: '杭州', rank: 85 },
  { id: '10121010107A', nameEn: 'Worldland', name: '宋城', lat: 30.17, lon: 120.1, iso: 'CN', countryEn: 'China', country: '中国', locationId: '101210101', adm1En: 'Zhejiang', adm1: '浙江', adm2En: 'Hangzhou', adm2: '杭州', rank: 80 },
  { id: '10101030006A', nameEn: 'Sun Park', name: '朝阳公园', lat: 39.94, lon: 116.48, iso: 'CN', countryEn: 'China', country: '中国', locationId: '101010300', adm1En: 'Beijing', adm1: '北京', adm2En: 'Beijing', adm2: '北京', rank: 70 },
  { id: '10121010109A', nameEn: 'Slender West Lake Scenic Attraction', name: '西湖', lat: 30.24, lon: 120.14, iso: 'CN', countryEn: 'China', country: '中国', locationId: '101210101', adm1En: 'Zhejiang', adm1: '浙江', adm2En: 'Hangzhou', adm2: '杭州', rank: 95 },
  { id: '10101010018A', nameEn: 'The Palace Museum', name: '故宫博物院', lat: 39.91, lon: 116.39, iso: 'CN', countryEn: 'China', country: '中国', locationId: '101010100', adm1En: 'Beijing', adm1: '北京', adm2En: 'Beijing', adm2: '北京', rank: 98 },
];
