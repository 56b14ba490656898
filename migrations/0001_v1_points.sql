CREATE TABLE "alert_points" (
	"id" text PRIMARY KEY NOT NULL,
	"lat" double precision NOT NULL,
	"lon" double precision NOT NULL,
	"last_tag" text,
	"attributions" text[],
	"last_fetched_at" timestamp with time zone,
	"last_ok_at" timestamp with time zone,
	"last_cycle_id" uuid,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "alert_points_lat_range" CHECK ("alert_points"."lat" BETWEEN -90 AND 90),
	CONSTRAINT "alert_points_lon_range" CHECK ("alert_points"."lon" BETWEEN -180 AND 180)
);
--> statement-breakpoint
ALTER TABLE "events" ADD COLUMN "attributions" text[];--> statement-breakpoint
ALTER TABLE "subscriptions" ADD COLUMN "points" text[];--> statement-breakpoint
CREATE INDEX "subscriptions_points_idx" ON "subscriptions" USING gin ("points");--> statement-breakpoint
ALTER TABLE "subscriptions" ADD CONSTRAINT "subscriptions_points" CHECK ("subscriptions"."points" IS NULL OR (cardinality("subscriptions"."points") > 0 AND array_position("subscriptions"."points", NULL) IS NULL));