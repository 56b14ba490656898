-- Every check re-marks the warnings it still sees (last_seen, misses). With last_seen indexed,
-- each of those updates was a new row version with entries in all three indexes; the sweeper's
-- pruning finds old rows through first_seen instead (a row last seen before a time was first
-- seen before it too), which never changes, and room on each page keeps the update in place.
CREATE INDEX "warnings_first_seen_idx" ON "warnings" USING btree ("first_seen");--> statement-breakpoint
DROP INDEX "warnings_last_seen_idx";--> statement-breakpoint
ALTER TABLE "warnings" SET (fillfactor = 50);
