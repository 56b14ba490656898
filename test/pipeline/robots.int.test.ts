import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeRobot } from '../../src/channels/robot-identity.js';
import { queryRows } from '../../src/db/client.js';
import { v7Warning } from '../../src/simulator/index.js';
import { startPipelineHarness, type PipelineHarness } from '../support/pipeline.js';
import { startRobotServer, type RobotServer } from '../support/robot-server.js';

/**
 * Chat robots end to end (docs/messages.md), over loopback robot servers that answer as the
 * vendors document: `qwn poll --once` finds warnings, the robot's own limit (WeCom 20 a minute)
 * is kept, what waits combines, a gone robot pauses its subscriber, a refused signature is a
 * dead letter, and no robot credential reaches a log line or `qwn deliveries`.
 */

const HANGZHOU = '101210101';
const NINGBO = '101210401';
const WENZHOU = '101210701';
const SHAOXING = '101210501';

const WECOM_KEY = 'wecom-key-7f3a9c2e51d84b06';
const GONE_KEY = 'wecom-key-removed-0c4e7a19d2';
const DING_TOKEN = 'ding-token-5b8e2f71c0a93d46';
const DING_SECRET = 'SECgood1b2c3d4e5f60718293a4b5c6d7e8f9';
const WRONG_SECRET = 'SECwrong9f8e7d6c5b4a39281706f5e4d3c2';
const FEISHU_TOKEN = 'feishu-hook-2d7c9e4a1b0f5836';
const FEISHU_SECRET = 'feishu-secret-9a4c1e7b3d52';
const CREDENTIALS = [
  WECOM_KEY,
  GONE_KEY,
  DING_TOKEN,
  DING_SECRET,
  WRONG_SECRET,
  FEISHU_TOKEN,
  FEISHU_SECRET,
];

/** Warnings R01..Rn at a place: unique titles, short texts (several fit one WeCom post). */
function warnings(place: string, from: number, count: number) {
  return Array.from({ length: count }, (_, i) => {
    const n = String(from + i).padStart(2, '0');
    return v7Warning({
      locationId: place,
      seq: from + i,
      typeCode: '1003',
      level: '黄色',
      title: `杭州市气象台发布暴雨黄色预警R${n}号`,
      text: `R${n}号：预计未来6小时有强降雨。`,
    });
  });
}

describe('chat robots: limits, gone, refused, secrets', () => {
  let h: PipelineHarness;
  let wecom: RobotServer;
  let ding: RobotServer;
  let feishu: RobotServer;
  let feishuId: string;
  let wecomUrl: string;
  let goneUrl: string;
  let dingUrl: string;
  let robotId: string;
  let goneId: string;
  let dingId: string;
  const output: string[] = [];

  beforeAll(async () => {
    h = await startPipelineHarness();
    wecom = await startRobotServer({ vendor: 'wecom', token: WECOM_KEY });
    ding = await startRobotServer({ vendor: 'dingtalk', token: DING_TOKEN, secret: DING_SECRET });
    feishu = await startRobotServer({
      vendor: 'feishu',
      token: FEISHU_TOKEN,
      secret: FEISHU_SECRET,
    });
    wecomUrl = wecom.url();
    // The same server, another key: it answers 93000 (robot removed), as WeCom does.
    goneUrl = wecomUrl.replace(WECOM_KEY, GONE_KEY);
    dingUrl = ding.url();
    await h.addPlace(HANGZHOU, '杭州');
    await h.addPlace(NINGBO, '宁波');
    await h.addPlace(WENZHOU, '温州');
    await h.addPlace(SHAOXING, '绍兴');
    feishuId = await h.addRobotSubscriber('feishu', feishu.url(), [SHAOXING], {
      name: '飞书值班',
      secret: FEISHU_SECRET,
    });
    // One message per notification: the hardest case for the limit.
    robotId = await h.addRobotSubscriber('wecom', wecomUrl, [HANGZHOU], {
      name: '杭州值班群',
      groupMode: 'none',
    });
    goneId = await h.addRobotSubscriber('wecom', goneUrl, [NINGBO], { name: '旧群' });
    dingId = await h.addRobotSubscriber('dingtalk', dingUrl, [WENZHOU], {
      name: '应急钉钉群',
      secret: WRONG_SECRET,
    });
  });
  afterAll(async () => {
    await h?.close();
    await wecom?.close();
    await ding?.close();
    await feishu?.close();
  });

  /** How far the runs' clock is ahead of the system's: the robot's minute passes this way. */
  let ahead = 0;
  const poll = async () => {
    const result = await h.pollOnce(
      { LOG_LEVEL: 'debug' },
      { now: () => new Date(Date.now() + ahead) },
    );
    output.push(result.stdout, result.stderr);
    expect(result.code).toBe(0);
    return result.summary;
  };

  it('keeps 20 posts a minute for 30 notifications, and delivers each exactly once', async () => {
    const started = Date.now();
    // Three cycles inside the minute: 10, 10, then 5 + 5 more while the robot is full.
    const all = [
      ...warnings(HANGZHOU, 1, 10),
      ...warnings(HANGZHOU, 11, 10),
      ...warnings(HANGZHOU, 21, 5),
      ...warnings(HANGZHOU, 26, 5),
    ];
    h.sim.setWarnings(NINGBO, [
      v7Warning({ locationId: NINGBO, seq: 1, typeCode: '1006', level: '橙色' }),
    ]);
    h.sim.setWarnings(WENZHOU, [
      v7Warning({ locationId: WENZHOU, seq: 1, typeCode: '1001', level: '红色' }),
    ]);
    for (const count of [10, 20, 25, 30]) {
      h.sim.setWarnings(HANGZHOU, all.slice(0, count));
      await poll();
    }
    const firstMinute = Date.now() - started;
    expect(firstMinute).toBeLessThan(55_000);
    // Inside the minute: exactly the robot's 20, the other 10 notifications wait, not failed.
    expect(wecom.posts.filter((p) => p.query.get('key') === WECOM_KEY)).toHaveLength(20);
    const waiting = await queryRows<{ status: string; hold: string; attempts: number; n: number }>(
      h.database.db,
      sql`SELECT m.status, m.hold, m.attempts, count(d.id)::int AS n
          FROM messages m JOIN deliveries d ON d.message_id = m.id
          WHERE m.subscriber_id = ${robotId} AND m.status <> 'sent'
          GROUP BY m.id ORDER BY n DESC`,
    );
    expect(waiting.reduce((sum, m) => sum + m.n, 0)).toBe(10);
    for (const m of waiting) expect(m).toMatchObject({ status: 'open', hold: 'throttle' });
    expect(waiting.every((m) => m.attempts === 0)).toBe(true);
    // One message waits with all ten: the third cycle's five joined the first of them to wait,
    // the fourth cycle's five were placed in it.
    expect(waiting).toHaveLength(1);

    // The minute passes; the next run sends what waited, in fewer posts than notifications.
    const [due] = await queryRows<{ at: Date }>(
      h.database.db,
      sql`SELECT max(next_attempt_at) AS at FROM messages WHERE subscriber_id = ${robotId}`,
    );
    ahead = Math.max(0, new Date(due!.at).getTime() - Date.now() + 500);
    await poll();
    const posts = wecom.posts.filter((p) => p.query.get('key') === WECOM_KEY);
    expect(posts).toHaveLength(21);
    const contents = posts.map(
      (p) => (p.json as { markdown: { content: string } }).markdown.content,
    );
    for (let i = 1; i <= 30; i++) {
      const mark = `R${String(i).padStart(2, '0')}号`;
      expect(
        contents.filter((c) => c.includes(mark)),
        mark,
      ).toHaveLength(1);
    }
    const unsent = await queryRows<{ n: number }>(
      h.database.db,
      sql`SELECT count(*)::int AS n FROM messages
          WHERE subscriber_id = ${robotId} AND status <> 'sent'`,
    );
    expect(unsent[0]!.n).toBe(0);
  });

  it('disables the subscriber of a gone robot, naming it without its URL', async () => {
    const [row] = await queryRows<{ active: boolean; disabled_reason: string | null }>(
      h.database.db,
      sql`SELECT active, disabled_reason FROM subscribers WHERE id = ${goneId}`,
    );
    expect(row!.active).toBe(false);
    expect(row!.disabled_reason).toContain(describeRobot(goneUrl));
    expect(row!.disabled_reason).toContain('93000');
    expect(row!.disabled_reason).not.toContain(GONE_KEY);
    expect(wecom.posts.filter((p) => p.query.get('key') === GONE_KEY)).toHaveLength(1);
  });

  it('makes a refused signature a dead letter with the vendor message', async () => {
    const [message] = await queryRows<{ status: string; last_error: string }>(
      h.database.db,
      sql`SELECT status, last_error FROM messages WHERE subscriber_id = ${dingId}`,
    );
    expect(message!.status).toBe('dead');
    expect(message!.last_error).toContain('310000');
    expect(message!.last_error).toContain('sign not match');
    expect(ding.posts).toHaveLength(1);
    expect(ding.posts[0]!.signatureValid).toBe(false);
  });

  it("waits out the vendor's rate-limit answer without failing or counting the attempt", async () => {
    feishu.queue({
      body: { code: 11232, msg: 'frequency limited psm[lark.oapi.app_platform_runtime]' },
    });
    h.sim.setWarnings(SHAOXING, [
      v7Warning({ locationId: SHAOXING, seq: 1, typeCode: '1003', level: '橙色' }),
    ]);
    const before = Date.now() + ahead;
    const summary = await poll();
    expect(summary.deliveries).toMatchObject({ held: 1, failed: 0 });
    expect(feishu.posts).toHaveLength(1);
    expect(feishu.posts[0]!.signatureValid).toBe(true);
    const [message] = await queryRows<{
      status: string;
      hold: string;
      attempts: number;
      last_error: string;
      next_attempt_at: Date;
    }>(
      h.database.db,
      sql`SELECT status, hold, attempts, last_error, next_attempt_at FROM messages
          WHERE subscriber_id = ${feishuId}`,
    );
    expect(message).toMatchObject({ status: 'open', hold: 'throttle', attempts: 0 });
    expect(message!.last_error).toMatch(/rate-limited/);
    // Feishu's lock is not documented: a minute, the longer of its windows.
    const waits = new Date(message!.next_attempt_at).getTime() - before;
    expect(waits).toBeGreaterThan(50_000);
    expect(waits).toBeLessThan(70_000);
  });

  it('shows robots as host#fingerprint and never a credential', async () => {
    const table = await h.qwn(['deliveries', '--limit', '100']);
    const json = await h.qwn(['deliveries', '--limit', '100', '--json']);
    const bySubscriber = await h.qwn(['deliveries', '--subscriber', describeRobot(dingUrl)]);
    expect(table.code).toBe(0);
    expect(table.stdout).toContain(describeRobot(wecomUrl));
    expect(table.stdout).toContain('wecom');
    expect(bySubscriber.stdout).toContain('dead');
    expect(bySubscriber.stdout).not.toContain(describeRobot(wecomUrl));
    output.push(table.stdout, table.stderr, json.stdout, json.stderr, bySubscriber.stdout);
    const everything = output.join('\n');
    // The logs did talk about the robots, by their descriptions.
    const logs = output.slice(0, -5).join('\n');
    expect(logs).toContain('robot message waits for the rate limit');
    expect(logs).toContain('robot gone, subscriber disabled');
    expect(logs).toContain(describeRobot(goneUrl));
    expect(logs).toContain(describeRobot(wecomUrl));
    for (const secret of CREDENTIALS) expect(everything).not.toContain(secret);
  });
});
