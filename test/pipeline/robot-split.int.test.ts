import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { queryRows } from '../../src/db/client.js';
import { ROBOT_LIMITS } from '../../src/domain/robot-render.js';
import { v7Warning } from '../../src/simulator/index.js';
import { startPipelineHarness, type PipelineHarness } from '../support/pipeline.js';
import { startRobotServer, type RobotServer } from '../support/robot-server.js';

/**
 * A robot message too large for one post (WeCom: 4096 bytes of markdown) is sent as several
 * posts, each warning in exactly one of them, none left out with a "not listed" line: what does
 * not fit moves to a message of its own (src/pipeline/deliver.ts, splitOversized).
 */

const HANGZHOU = '101210101';
const KEY = 'wecom-key-split-4c1e7b3d52a9';

/** Warnings S01..Sn with texts long enough that only a few fit one post. */
function longWarnings(count: number) {
  return Array.from({ length: count }, (_, i) => {
    const n = String(i + 1).padStart(2, '0');
    return v7Warning({
      locationId: HANGZHOU,
      seq: i + 1,
      typeCode: '1003',
      level: i % 3 === 0 ? '橙色' : '黄色',
      title: `杭州市气象台发布暴雨预警S${n}号`,
      text: `S${n}号：${'预计未来六小时全市有强降雨，局地伴有雷电和短时大风，请注意防范。'.repeat(6)}`,
    });
  });
}

describe('a robot message larger than one post', () => {
  let h: PipelineHarness;
  let wecom: RobotServer;
  let robotId: string;

  beforeAll(async () => {
    h = await startPipelineHarness();
    wecom = await startRobotServer({ vendor: 'wecom', token: KEY });
    await h.addPlace(HANGZHOU, '杭州');
    // One message per cycle: the cycle's 24 warnings all in it.
    robotId = await h.addRobotSubscriber('wecom', wecom.url(), [HANGZHOU], {
      name: '杭州值班群',
      groupMode: 'cycle',
    });
  });
  afterAll(async () => {
    await h?.close();
    await wecom?.close();
  });

  it('goes out as several posts, each warning in exactly one, none left out', async () => {
    h.sim.setWarnings(HANGZHOU, longWarnings(24));
    const result = await h.pollOnce();
    expect(result.code).toBe(0);

    const contents = wecom.posts.map(
      (p) => (p.json as { markdown: { content: string } }).markdown.content,
    );
    expect(contents.length).toBeGreaterThan(1);
    for (const content of contents) {
      expect(Buffer.byteLength(content, 'utf8')).toBeLessThanOrEqual(
        ROBOT_LIMITS.wecomContentBytes,
      );
      expect(content).not.toContain('未列出');
    }
    for (let i = 1; i <= 24; i += 1) {
      const mark = `S${String(i).padStart(2, '0')}号`;
      expect(
        contents.filter((c) => c.includes(`暴雨预警${mark}`)),
        mark,
      ).toHaveLength(1);
    }
    // The orange warnings (every third) lead the first post: the highest level goes first.
    expect(contents[0]).toContain('暴雨预警S01号');

    // Every notification is in one sent message, one message per post, each under its own id.
    const messages = await queryRows<{ id: string; status: string; n: number }>(
      h.database.db,
      sql`SELECT m.id, m.status, count(d.id)::int AS n
          FROM messages m JOIN deliveries d ON d.message_id = m.id
          WHERE m.subscriber_id = ${robotId} GROUP BY m.id`,
    );
    expect(messages.reduce((sum, m) => sum + m.n, 0)).toBe(24);
    expect(messages.every((m) => m.status === 'sent')).toBe(true);
    expect(messages).toHaveLength(contents.length);
    for (const m of messages) {
      expect(contents.filter((c) => c.includes(m.id))).toHaveLength(1);
    }
  });
});
