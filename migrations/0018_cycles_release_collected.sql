-- A "cycle" message of a subscriber who groups by cycle and nothing else has no row while it
-- collects: its notifications name it, and the cycle's row says whether it still collects
-- (src/pipeline/cycle-release.ts). A cycle that has ended released its messages by the rules
-- it ran under (their rows were written by the checks and released by the cycle's end).
ALTER TABLE "poll_cycles" ADD COLUMN "released_at" timestamp with time zone;--> statement-breakpoint
UPDATE "poll_cycles" SET "released_at" = coalesce("finished_at", "started_at")
WHERE "status" <> 'running';--> statement-breakpoint
CREATE INDEX "poll_cycles_collecting_idx" ON "poll_cycles" USING btree ("started_at") WHERE "poll_cycles"."released_at" IS NULL;
