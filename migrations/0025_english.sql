-- README, promises, language: places keep the upstream's English name for English subscribers,
-- and cycles count the `lang=en` calls made for them apart from the checks.
ALTER TABLE "places" ADD COLUMN "name_en" text;--> statement-breakpoint
ALTER TABLE "poll_cycles" ADD COLUMN "english_calls" integer DEFAULT 0 NOT NULL;
