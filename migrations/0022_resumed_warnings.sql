-- README, promises: a warning told as ended that comes back is told as resumed, and its later end
-- told again. Its occurrence (how often it came back) is part of the event's and the
-- notification's key, so each occurrence's `resumed` and `expired` are told once. A miss counts
-- only in a cycle that began after the warning was last seen and after the cycle of its last
-- miss (`last_miss_at`). The cycles count resumed warnings and records skipped as unreadable.
ALTER TABLE "deliveries" DROP CONSTRAINT "deliveries_once";--> statement-breakpoint
ALTER TABLE "events" DROP CONSTRAINT "events_place_warning_type";--> statement-breakpoint
ALTER TABLE "deliveries" DROP CONSTRAINT "deliveries_event_type";--> statement-breakpoint
ALTER TABLE "events" DROP CONSTRAINT "events_type";--> statement-breakpoint
ALTER TABLE "deliveries" ADD COLUMN "occurrence" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "events" ADD COLUMN "occurrence" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "poll_cycles" ADD COLUMN "events_resumed" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "poll_cycles" ADD COLUMN "skipped_records" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "warnings" ADD COLUMN "last_miss_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "warnings" ADD COLUMN "occurrence" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "deliveries" ADD CONSTRAINT "deliveries_once" UNIQUE("subscriber_id","warning_id","event_type","occurrence");--> statement-breakpoint
ALTER TABLE "events" ADD CONSTRAINT "events_place_warning_type" UNIQUE("place_id","warning_id","type","occurrence");--> statement-breakpoint
ALTER TABLE "deliveries" ADD CONSTRAINT "deliveries_event_type" CHECK ("deliveries"."event_type" IN ('new','update','cancel','expired','resumed'));--> statement-breakpoint
ALTER TABLE "events" ADD CONSTRAINT "events_type" CHECK ("events"."type" IN ('new','update','cancel','expired','resumed'));--> statement-breakpoint
ALTER TABLE "warnings" ADD CONSTRAINT "warnings_occurrence" CHECK ("warnings"."occurrence" >= 0);