import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'drizzle-orm';
import { exportPKCS8, exportSPKI, generateKeyPair } from 'jose';
import type { Simulator } from '../../src/simulator/index.js';
import { startPipelineHarness, type PipelineHarness } from '../support/pipeline.js';

/**
 * The pipeline harness in v1 mode with JWT auth end to end: an Ed25519 key made here, its PEM in
 * a temp file named by QWEATHER_JWT_PRIVATE_KEY, and a simulator that accepts only tokens signed
 * with it (no key auth at all).
 */
export interface V1Harness {
  readonly h: PipelineHarness;
  /** The JWT-checking simulator every `qwn` process of the harness talks to. */
  readonly sim: Simulator;
  /** The PEM of a key the simulator does not trust. */
  readonly wrongKeyPath: string;
  addPlace(id: string, name: string, lat: number, lon: number, tz?: string): Promise<void>;
  subscribe(
    address: { email: string } | { webhookPath: string },
    watched: { place: string; points?: string[] }[],
    filter?: { minLevel?: string },
  ): Promise<string>;
  /** weatherAlert requests per "lat,lon" since the last reset. */
  alertCalls(): Record<string, number>;
  close(): Promise<void>;
}

export async function startV1Harness(): Promise<V1Harness> {
  const trusted = await generateKeyPair('EdDSA', { extractable: true });
  const untrusted = await generateKeyPair('EdDSA', { extractable: true });
  const dir = await mkdtemp(join(tmpdir(), 'qwn-v1-'));
  const keyPath = join(dir, 'qweather-ed25519.pem');
  const wrongKeyPath = join(dir, 'other-ed25519.pem');
  await writeFile(keyPath, await exportPKCS8(trusted.privateKey), { mode: 0o600 });
  await writeFile(wrongKeyPath, await exportPKCS8(untrusted.privateKey), { mode: 0o600 });
  const h = await startPipelineHarness({
    simulator: { jwtPublicKeyPem: await exportSPKI(trusted.publicKey) },
    env: {
      QWEATHER_ALERT_SOURCE: 'v1',
      QWEATHER_JWT_KEY_ID: 'KTEST0001',
      QWEATHER_JWT_PROJECT_ID: 'PTEST0001',
      QWEATHER_JWT_PRIVATE_KEY: keyPath,
    },
  });
  const { sim } = h;
  const db = h.database.db;
  return {
    h,
    sim,
    wrongKeyPath,
    async addPlace(id, name, lat, lon, tz = 'Asia/Shanghai') {
      await db.execute(sql`
        INSERT INTO places (id, name, lat, lon, tz) VALUES (${id}, ${name}, ${lat}, ${lon}, ${tz})
        ON CONFLICT DO NOTHING`);
    },
    async subscribe(address, watched, filter = {}) {
      const id =
        'email' in address
          ? await h.addEmailSubscriber(address.email, [])
          : await h.addWebhookSubscriber(address.webhookPath, []);
      for (const w of watched) {
        await db.execute(sql`
          INSERT INTO subscriptions (subscriber_id, place_id, min_level, points)
          VALUES (${id}, ${w.place}, ${filter.minLevel ?? null},
                  ${w.points ? sql`${sql.param(w.points)}::text[]` : null})`);
      }
      return id;
    },
    alertCalls: () => ({ ...sim.requests().byOperationLocation.weatherAlert }),
    async close() {
      await h.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
