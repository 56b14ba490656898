-- A v1 check finds the subscriptions at its point through this index or through their place's
-- coordinates (src/pipeline/check-point.ts, subscriptionsAt). Most subscriptions store no points:
-- each took a null entry all the same, held in GIN's pending list until a vacuum, and every
-- lookup read that list whole (345 pages for the bench's 100,000 subscriptions). The index now
-- holds only subscriptions with points, written straight into it.
DROP INDEX "subscriptions_points_idx";--> statement-breakpoint
CREATE INDEX "subscriptions_points_idx" ON "subscriptions" USING gin ("points") WITH (fastupdate=false) WHERE "subscriptions"."points" IS NOT NULL;