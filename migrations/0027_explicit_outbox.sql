-- Every message has its row from the statement that writes its first notification, or, for a
-- cycle's message, from its cycle's release (the outbox, docs/design.md). Until now a direct
-- message got its row only when sent, failed or handed back, its first-attempt batch standing for
-- it meanwhile, and a released cycle's message only when sent. Those get their row here as they stand: pending, never tried, owned by the job of their
-- batch. A cycle's message still collecting keeps no row until its cycle's release writes it.
INSERT INTO "messages" ("id", "subscriber_id", "channel", "status", "hold", "cycle_id", "attempts",
  "next_attempt_at", "first_job_id", "created_at", "updated_at")
SELECT d."id", d."subscriber_id", d."channel", 'pending', NULL, NULL, 0, d."created_at",
  (SELECT b."job_id" FROM "first_attempt_batches" b WHERE d."id" = ANY(b."message_ids") LIMIT 1),
  d."created_at", now()
FROM "deliveries" d
WHERE d."message_id" = d."id"
  AND NOT EXISTS (SELECT 1 FROM "messages" m WHERE m."id" = d."id");--> statement-breakpoint
INSERT INTO "messages" ("id", "subscriber_id", "channel", "status", "hold", "cycle_id", "attempts",
  "next_attempt_at", "first_job_id", "created_at", "updated_at")
SELECT n."message_id", n."subscriber_id", n."channel", 'pending', 'cycle', n."cycle_id", 0,
  coalesce(c."released_at", n."created_at"),
  (SELECT b."job_id" FROM "first_attempt_batches" b WHERE n."message_id" = ANY(b."message_ids")
   LIMIT 1),
  n."created_at", now()
FROM (SELECT d."message_id", d."subscriber_id", d."channel", d."cycle_id",
        min(d."created_at") AS "created_at"
      FROM "deliveries" d
      WHERE d."message_id" <> d."id"
        AND NOT EXISTS (SELECT 1 FROM "messages" m WHERE m."id" = d."message_id")
      GROUP BY d."message_id", d."subscriber_id", d."channel", d."cycle_id") n
LEFT JOIN "poll_cycles" c ON c."id" = n."cycle_id"
WHERE c."released_at" IS NOT NULL OR c."id" IS NULL;--> statement-breakpoint
DROP TABLE "first_attempt_batches";
