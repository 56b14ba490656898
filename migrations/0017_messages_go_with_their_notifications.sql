-- messages_created_idx took an entry for every sent message (about 80 bytes of WAL each) and
-- served only retention, which looked for finished messages no notification carried any more.
-- Retention now removes a finished message in the statement that removes its last
-- notification (src/pipeline/retention.ts), so none is left uncarried. Those an earlier sweep
-- left behind (its message step worked a backlog more slowly than its notification step) go
-- here: a message is written with its notifications, so one without any is finished.
DELETE FROM "messages" m
WHERE m."status" IN ('sent', 'dead')
  AND NOT EXISTS (SELECT 1 FROM "deliveries" d WHERE d."message_id" = m."id");--> statement-breakpoint
DROP INDEX "messages_created_idx";
