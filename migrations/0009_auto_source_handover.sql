CREATE TABLE "upstream_source" (
	"singleton" boolean PRIMARY KEY DEFAULT true NOT NULL,
	"source" text NOT NULL,
	"switched_at" timestamp with time zone DEFAULT now() NOT NULL,
	"reason" text NOT NULL,
	CONSTRAINT "upstream_source_singleton" CHECK ("upstream_source"."singleton"),
	CONSTRAINT "upstream_source_source" CHECK ("upstream_source"."source" IN ('v1'))
);
--> statement-breakpoint
ALTER TABLE "alert_points" ADD COLUMN "v7_adopted_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "poll_cycles" ADD COLUMN "source" text;