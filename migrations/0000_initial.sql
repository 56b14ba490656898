CREATE TABLE "deliveries" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"subscriber_id" uuid NOT NULL,
	"event_id" bigint NOT NULL,
	"cycle_id" uuid,
	"place_id" text NOT NULL,
	"warning_id" text NOT NULL,
	"event_type" text NOT NULL,
	"channel" text NOT NULL,
	"status" text DEFAULT 'pending' NOT NULL,
	"attempts" integer DEFAULT 0 NOT NULL,
	"next_attempt_at" timestamp with time zone DEFAULT now() NOT NULL,
	"claimed_until" timestamp with time zone,
	"last_error" text,
	"sent_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "deliveries_once" UNIQUE("subscriber_id","warning_id","event_type"),
	CONSTRAINT "deliveries_status" CHECK ("deliveries"."status" IN ('pending', 'sent', 'retrying', 'dead')),
	CONSTRAINT "deliveries_event_type" CHECK ("deliveries"."event_type" IN ('new','update','cancel','expired')),
	CONSTRAINT "deliveries_channel" CHECK ("deliveries"."channel" IN ('email', 'webhook')),
	CONSTRAINT "deliveries_attempts" CHECK ("deliveries"."attempts" >= 0)
);
--> statement-breakpoint
CREATE TABLE "events" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"cycle_id" uuid,
	"place_id" text NOT NULL,
	"warning_id" text NOT NULL,
	"type" text NOT NULL,
	"supersedes" text[] DEFAULT '{}'::text[] NOT NULL,
	"record" jsonb NOT NULL,
	"detected_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "events_place_warning_type" UNIQUE("place_id","warning_id","type"),
	CONSTRAINT "events_type" CHECK ("events"."type" IN ('new','update','cancel','expired'))
);
--> statement-breakpoint
CREATE TABLE "places" (
	"id" text PRIMARY KEY NOT NULL,
	"name" text NOT NULL,
	"lat" double precision,
	"lon" double precision,
	"tz" text DEFAULT 'Asia/Shanghai' NOT NULL,
	"adm1" text,
	"adm2" text,
	"country" text,
	"last_fetched_at" timestamp with time zone,
	"last_ok_at" timestamp with time zone,
	"last_cycle_id" uuid,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "places_id_format" CHECK ("places"."id" ~ '^[A-Za-z0-9]{1,32}$'),
	CONSTRAINT "places_name_present" CHECK (length(btrim("places"."name")) > 0),
	CONSTRAINT "places_lat_range" CHECK ("places"."lat" IS NULL OR "places"."lat" BETWEEN -90 AND 90),
	CONSTRAINT "places_lon_range" CHECK ("places"."lon" IS NULL OR "places"."lon" BETWEEN -180 AND 180)
);
--> statement-breakpoint
CREATE TABLE "poll_cycles" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"job_key" text,
	"status" text DEFAULT 'running' NOT NULL,
	"started_at" timestamp with time zone DEFAULT now() NOT NULL,
	"finished_at" timestamp with time zone,
	"listed" integer DEFAULT 0 NOT NULL,
	"planned" integer DEFAULT 0 NOT NULL,
	"checked" integer DEFAULT 0 NOT NULL,
	"upstream_calls" integer DEFAULT 0 NOT NULL,
	"upstream_errors" integer DEFAULT 0 NOT NULL,
	"events_new" integer DEFAULT 0 NOT NULL,
	"events_update" integer DEFAULT 0 NOT NULL,
	"events_cancel" integer DEFAULT 0 NOT NULL,
	"events_expired" integer DEFAULT 0 NOT NULL,
	"deliveries_created" integer DEFAULT 0 NOT NULL,
	"error" text,
	CONSTRAINT "poll_cycles_job_key_unique" UNIQUE("job_key"),
	CONSTRAINT "poll_cycles_status" CHECK ("poll_cycles"."status" IN ('running', 'done', 'failed'))
);
--> statement-breakpoint
CREATE TABLE "subscribers" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"name" text,
	"email" text,
	"webhook_url" text,
	"webhook_secret" text,
	"lang" text DEFAULT 'zh' NOT NULL,
	"active" boolean DEFAULT true NOT NULL,
	"disabled_reason" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "subscribers_email_unique" UNIQUE("email"),
	CONSTRAINT "subscribers_webhook_url_unique" UNIQUE("webhook_url"),
	CONSTRAINT "subscribers_one_address" CHECK (("subscribers"."email" IS NULL) <> ("subscribers"."webhook_url" IS NULL)),
	CONSTRAINT "subscribers_email_format" CHECK ("subscribers"."email" IS NULL OR "subscribers"."email" ~ '^[^@[:space:]]+@[^@[:space:]]+\.[^@[:space:]]+$'),
	CONSTRAINT "subscribers_webhook_format" CHECK ("subscribers"."webhook_url" IS NULL OR "subscribers"."webhook_url" ~ '^https?://[^/@[:space:]]+(/[^[:space:]]*)?$'),
	CONSTRAINT "subscribers_webhook_secret" CHECK (("subscribers"."webhook_url" IS NULL AND "subscribers"."webhook_secret" IS NULL) OR ("subscribers"."webhook_url" IS NOT NULL AND "subscribers"."webhook_secret" IS NOT NULL AND "subscribers"."webhook_secret" ~ '^whsec_[A-Za-z0-9+/]{32,88}={0,2}$')),
	CONSTRAINT "subscribers_lang" CHECK ("subscribers"."lang" IN ('zh', 'en'))
);
--> statement-breakpoint
CREATE TABLE "subscriptions" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"subscriber_id" uuid NOT NULL,
	"place_id" text NOT NULL,
	"min_level" text,
	"types" text[],
	"events" text[],
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "subscriptions_subscriber_place" UNIQUE("subscriber_id","place_id"),
	CONSTRAINT "subscriptions_min_level" CHECK ("subscriptions"."min_level" IS NULL OR "subscriptions"."min_level" IN ('白色','蓝色','黄色','橙色','红色')),
	CONSTRAINT "subscriptions_types" CHECK ("subscriptions"."types" IS NULL OR (cardinality("subscriptions"."types") > 0 AND array_position("subscriptions"."types", '') IS NULL AND array_position("subscriptions"."types", NULL) IS NULL)),
	CONSTRAINT "subscriptions_events" CHECK ("subscriptions"."events" IS NULL OR (cardinality("subscriptions"."events") > 0 AND "subscriptions"."events" <@ ARRAY['new','update','cancel','expired']::text[]))
);
--> statement-breakpoint
CREATE TABLE "warnings" (
	"place_id" text NOT NULL,
	"warning_id" text NOT NULL,
	"state" text NOT NULL,
	"title" text NOT NULL,
	"level" text NOT NULL,
	"type_code" text,
	"type_name" text,
	"status" text NOT NULL,
	"start_time" timestamp with time zone,
	"end_time" timestamp with time zone,
	"record" jsonb NOT NULL,
	"raw" jsonb,
	"first_seen" timestamp with time zone NOT NULL,
	"last_seen" timestamp with time zone NOT NULL,
	"misses" integer DEFAULT 0 NOT NULL,
	"closed_at" timestamp with time zone,
	CONSTRAINT "warnings_pk" PRIMARY KEY("place_id","warning_id"),
	CONSTRAINT "warnings_state" CHECK ("warnings"."state" IN ('open', 'superseded', 'cancelled', 'expired')),
	CONSTRAINT "warnings_level" CHECK ("warnings"."level" IN ('白色','蓝色','黄色','橙色','红色', 'unknown')),
	CONSTRAINT "warnings_status" CHECK ("warnings"."status" IN ('active', 'update', 'cancel')),
	CONSTRAINT "warnings_misses" CHECK ("warnings"."misses" >= 0),
	CONSTRAINT "warnings_closed" CHECK (("warnings"."state" = 'open') = ("warnings"."closed_at" IS NULL))
);
--> statement-breakpoint
ALTER TABLE "deliveries" ADD CONSTRAINT "deliveries_subscriber_id_subscribers_id_fk" FOREIGN KEY ("subscriber_id") REFERENCES "public"."subscribers"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "deliveries" ADD CONSTRAINT "deliveries_event_id_events_id_fk" FOREIGN KEY ("event_id") REFERENCES "public"."events"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "events" ADD CONSTRAINT "events_cycle_id_poll_cycles_id_fk" FOREIGN KEY ("cycle_id") REFERENCES "public"."poll_cycles"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "subscriptions" ADD CONSTRAINT "subscriptions_subscriber_id_subscribers_id_fk" FOREIGN KEY ("subscriber_id") REFERENCES "public"."subscribers"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "subscriptions" ADD CONSTRAINT "subscriptions_place_id_places_id_fk" FOREIGN KEY ("place_id") REFERENCES "public"."places"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "deliveries_due_idx" ON "deliveries" USING btree ("next_attempt_at") WHERE "deliveries"."status" IN ('pending', 'retrying');--> statement-breakpoint
CREATE INDEX "deliveries_cycle_idx" ON "deliveries" USING btree ("cycle_id");--> statement-breakpoint
CREATE INDEX "deliveries_created_idx" ON "deliveries" USING btree ("created_at");--> statement-breakpoint
CREATE INDEX "events_cycle_idx" ON "events" USING btree ("cycle_id");--> statement-breakpoint
CREATE INDEX "poll_cycles_started_idx" ON "poll_cycles" USING btree ("started_at");--> statement-breakpoint
CREATE INDEX "subscriptions_place_idx" ON "subscriptions" USING btree ("place_id");--> statement-breakpoint
CREATE INDEX "warnings_open_idx" ON "warnings" USING btree ("place_id") WHERE "warnings"."state" = 'open';--> statement-breakpoint
CREATE INDEX "warnings_last_seen_idx" ON "warnings" USING btree ("last_seen");