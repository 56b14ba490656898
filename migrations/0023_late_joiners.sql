-- README, promises, late joiners: a subscription made (or widened) while warnings are in force is
-- told them at the next cycle, through an event of its own (`in_force`), one per cycle, place
-- and warning beside the warning's detected events. Subscriptions that exist already have been
-- told what they were owed: only new ones start with their catch-up pending.
ALTER TABLE "events" DROP CONSTRAINT "events_place_warning_type";--> statement-breakpoint
ALTER TABLE "events" ADD COLUMN "in_force" boolean DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE "subscriptions" ADD COLUMN "catch_up" boolean DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE "subscriptions" ALTER COLUMN "catch_up" SET DEFAULT true;--> statement-breakpoint
CREATE UNIQUE INDEX "events_place_warning_type" ON "events" USING btree ("place_id","warning_id","type","occurrence") WHERE NOT "events"."in_force";--> statement-breakpoint
CREATE UNIQUE INDEX "events_in_force_once" ON "events" USING btree ("cycle_id","place_id","warning_id") WHERE "events"."in_force";--> statement-breakpoint
CREATE INDEX "subscriptions_catch_up_idx" ON "subscriptions" USING btree ("id") WHERE "subscriptions"."catch_up";
