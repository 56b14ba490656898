-- README, promises. Under QWEATHER_ALERT_SOURCE=auto, only three cycles in a row of v7 answering
-- 403 "Deprecated" (or a JSON 404) switch to v1: the evidence is counted here. And an email
-- address is one mailbox, compared without letter case: `A@X.ORG` is the subscriber `a@x.org`,
-- so an unsubscribe holds whatever case a later seed writes. (A database holding two addresses
-- that differ only in case must have one of them removed before this migration.)
CREATE TABLE "v7_retirement" (
	"singleton" boolean PRIMARY KEY DEFAULT true NOT NULL,
	"cycles" integer NOT NULL,
	"last_cycle_id" uuid NOT NULL,
	"first_seen_at" timestamp with time zone NOT NULL,
	"reason" text NOT NULL,
	CONSTRAINT "v7_retirement_singleton" CHECK ("v7_retirement"."singleton"),
	CONSTRAINT "v7_retirement_cycles" CHECK ("v7_retirement"."cycles" >= 1)
);
--> statement-breakpoint
ALTER TABLE "subscribers" DROP CONSTRAINT "subscribers_email_unique";--> statement-breakpoint
ALTER TABLE "subscribers" DROP CONSTRAINT "subscribers_email_format";--> statement-breakpoint
CREATE UNIQUE INDEX "subscribers_email_lower_unique" ON "subscribers" USING btree (lower("email"));--> statement-breakpoint
ALTER TABLE "subscribers" ADD CONSTRAINT "subscribers_email_format" CHECK ("subscribers"."email" IS NULL OR "subscribers"."email" ~ '^[^@[:space:][:cntrl:],;<>"]+@[^@[:space:][:cntrl:],;<>"]+\.[^@[:space:][:cntrl:],;<>"]+$');
