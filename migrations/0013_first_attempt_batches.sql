-- A direct message (one notification, nothing holding it back) gets its row in "messages" only
-- once something must be remembered of it: its send, a failure, or its hand-back by the sweeper.
-- Until then its notification and the batch row of its first-attempt job say all there is
-- (src/pipeline/deferred-messages.ts). Issue 21: a webhook wrote three row versions (its
-- notification, its message, the sent mark); it now writes two.
CREATE TABLE "first_attempt_batches" (
	"job_id" text PRIMARY KEY NOT NULL,
	"channel" text NOT NULL,
	"message_ids" uuid[] NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "first_attempt_batches_channel" CHECK ("first_attempt_batches"."channel" IN ('email', 'webhook'))
);
--> statement-breakpoint
CREATE INDEX "first_attempt_batches_created_idx" ON "first_attempt_batches" USING btree ("created_at");