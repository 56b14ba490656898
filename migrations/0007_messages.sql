-- Messages (docs/messages.md): what is sent, carrying one or more notifications of one subscriber.
-- The send state (status, attempts, schedule, claim, last error) moves from the notification
-- ledger to its message. Each existing notification becomes a message of its own under the same
-- id, so a webhook-id or Message-ID already sent stays the same and nothing is sent again.
CREATE TABLE "messages" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"subscriber_id" uuid NOT NULL,
	"channel" text NOT NULL,
	"status" text DEFAULT 'pending' NOT NULL,
	"hold" text,
	"cycle_id" uuid,
	"attempts" integer DEFAULT 0 NOT NULL,
	"next_attempt_at" timestamp with time zone DEFAULT now() NOT NULL,
	"claimed_until" timestamp with time zone,
	"first_job_id" text,
	"last_error" text,
	"sent_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "messages_status" CHECK ("messages"."status" IN ('open', 'pending', 'sent', 'retrying', 'dead')),
	CONSTRAINT "messages_hold" CHECK ("messages"."hold" IS NULL OR "messages"."hold" IN ('cycle', 'window', 'quiet', 'throttle')),
	CONSTRAINT "messages_channel" CHECK ("messages"."channel" IN ('email', 'webhook')),
	CONSTRAINT "messages_attempts" CHECK ("messages"."attempts" >= 0)
);
--> statement-breakpoint
ALTER TABLE "deliveries" ADD COLUMN "message_id" uuid;--> statement-breakpoint
ALTER TABLE "deliveries" ADD COLUMN "urgent" boolean DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE "subscribers" ADD COLUMN "group_mode" text;--> statement-breakpoint
ALTER TABLE "subscribers" ADD COLUMN "group_window_seconds" integer;--> statement-breakpoint
ALTER TABLE "subscribers" ADD COLUMN "timezone" text;--> statement-breakpoint
ALTER TABLE "subscribers" ADD COLUMN "quiet_from" text;--> statement-breakpoint
ALTER TABLE "subscribers" ADD COLUMN "quiet_to" text;--> statement-breakpoint
ALTER TABLE "subscribers" ADD COLUMN "quiet_bypass_level" text;--> statement-breakpoint
ALTER TABLE "subscribers" ADD COLUMN "max_per_hour" integer;--> statement-breakpoint
ALTER TABLE "subscribers" ADD COLUMN "unsubscribed_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "messages" ADD CONSTRAINT "messages_subscriber_id_subscribers_id_fk" FOREIGN KEY ("subscriber_id") REFERENCES "public"."subscribers"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "messages_due_idx" ON "messages" USING btree ("next_attempt_at") WHERE "messages"."status" IN ('open', 'pending', 'retrying');--> statement-breakpoint
CREATE INDEX "messages_open_idx" ON "messages" USING btree ("subscriber_id") WHERE "messages"."status" = 'open';--> statement-breakpoint
CREATE INDEX "messages_subscriber_sent_idx" ON "messages" USING btree ("subscriber_id","sent_at");--> statement-breakpoint
CREATE INDEX "messages_created_idx" ON "messages" USING btree ("created_at");--> statement-breakpoint
CREATE INDEX "deliveries_message_idx" ON "deliveries" USING btree ("message_id");--> statement-breakpoint
ALTER TABLE "subscribers" ADD CONSTRAINT "subscribers_group" CHECK (("subscribers"."group_mode" IS NULL OR "subscribers"."group_mode" IN ('none', 'cycle', 'window')) AND ("subscribers"."group_mode" = 'window') = ("subscribers"."group_window_seconds" IS NOT NULL) AND ("subscribers"."group_window_seconds" IS NULL OR "subscribers"."group_window_seconds" BETWEEN 1 AND 3600));--> statement-breakpoint
ALTER TABLE "subscribers" ADD CONSTRAINT "subscribers_timezone" CHECK ("subscribers"."timezone" IS NULL OR "subscribers"."timezone" ~ '^[A-Za-z][A-Za-z0-9_+-]*(/[A-Za-z0-9_+-]+)*$');--> statement-breakpoint
ALTER TABLE "subscribers" ADD CONSTRAINT "subscribers_quiet_hours" CHECK (("subscribers"."quiet_from" IS NULL) = ("subscribers"."quiet_to" IS NULL) AND ("subscribers"."quiet_from" IS NULL OR ("subscribers"."quiet_from" ~ '^([01][0-9]|2[0-3]):[0-5][0-9](:[0-5][0-9])?$' AND "subscribers"."quiet_to" ~ '^([01][0-9]|2[0-3]):[0-5][0-9](:[0-5][0-9])?$' AND "subscribers"."quiet_from" <> "subscribers"."quiet_to")) AND ("subscribers"."quiet_bypass_level" IS NULL OR ("subscribers"."quiet_from" IS NOT NULL AND "subscribers"."quiet_bypass_level" IN ('白色','蓝色','黄色','橙色','红色'))));--> statement-breakpoint
ALTER TABLE "subscribers" ADD CONSTRAINT "subscribers_max_per_hour" CHECK ("subscribers"."max_per_hour" IS NULL OR "subscribers"."max_per_hour" BETWEEN 1 AND 1000);--> statement-breakpoint
INSERT INTO "messages" ("id", "subscriber_id", "channel", "status", "attempts", "next_attempt_at",
    "claimed_until", "first_job_id", "last_error", "sent_at", "created_at", "updated_at")
  SELECT "id", "subscriber_id", "channel", "status", "attempts", "next_attempt_at",
    "claimed_until", "first_job_id", "last_error", "sent_at", "created_at", "updated_at"
  FROM "deliveries";--> statement-breakpoint
UPDATE "deliveries" SET "message_id" = "id";--> statement-breakpoint
ALTER TABLE "deliveries" ALTER COLUMN "message_id" SET NOT NULL;--> statement-breakpoint
ALTER TABLE "deliveries" DROP CONSTRAINT "deliveries_status";--> statement-breakpoint
ALTER TABLE "deliveries" DROP CONSTRAINT "deliveries_attempts";--> statement-breakpoint
DROP INDEX "deliveries_due_idx";--> statement-breakpoint
ALTER TABLE "deliveries" DROP COLUMN "status";--> statement-breakpoint
ALTER TABLE "deliveries" DROP COLUMN "attempts";--> statement-breakpoint
ALTER TABLE "deliveries" DROP COLUMN "next_attempt_at";--> statement-breakpoint
ALTER TABLE "deliveries" DROP COLUMN "claimed_until";--> statement-breakpoint
ALTER TABLE "deliveries" DROP COLUMN "first_job_id";--> statement-breakpoint
ALTER TABLE "deliveries" DROP COLUMN "last_error";--> statement-breakpoint
ALTER TABLE "deliveries" DROP COLUMN "sent_at";--> statement-breakpoint
ALTER TABLE "deliveries" DROP COLUMN "updated_at";--> statement-breakpoint
-- Room on each page for a message's next version, so a claim stays a HOT update (as 0003 did
-- for the ledger, which is now written once and never updated).
ALTER TABLE "messages" SET (fillfactor = 50);--> statement-breakpoint
ALTER TABLE "deliveries" SET (fillfactor = 100);
