import { createUnsubscribeEndpoint } from '../../src/admin/unsubscribe.js';
import type { Db } from '../../src/db/client.js';
import { createLogger } from '../../src/logger.js';
import { startOpsServer, type OpsServer } from '../../src/ops/http-server.js';

/**
 * The worker's HTTP server with only its unsubscribe pages answering, on a free port: what a
 * link in an email opens. Health and metrics are not probed where this is used.
 */
export async function startUnsubscribeServer(
  db: Db,
  secret: string,
): Promise<{ server: OpsServer; base: string }> {
  const logger = createLogger('silent');
  const server = await startOpsServer({
    port: 0,
    host: '127.0.0.1',
    logger,
    health: () => Promise.reject(new Error('not probed here')),
    metrics: () => Promise.resolve({ contentType: 'text/plain', body: '' }),
    unsubscribe: createUnsubscribeEndpoint({ db, secret, logger }),
  });
  return { server, base: `http://127.0.0.1:${server.port}` };
}
