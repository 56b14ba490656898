-- qwn test-send: the marked test messages sent through a subscriber's channel, kept apart from
-- the ledger (a test is never a warning notification).
CREATE TABLE "test_sends" (
	"id" uuid PRIMARY KEY NOT NULL,
	"subscriber_id" uuid NOT NULL,
	"channel" text NOT NULL,
	"sent_at" timestamp with time zone NOT NULL,
	"ok" boolean NOT NULL,
	"detail" text
);
--> statement-breakpoint
ALTER TABLE "test_sends" ADD CONSTRAINT "test_sends_subscriber_id_subscribers_id_fk" FOREIGN KEY ("subscriber_id") REFERENCES "public"."subscribers"("id") ON DELETE cascade ON UPDATE no action;