ALTER TABLE "deliveries" DROP CONSTRAINT "deliveries_channel";--> statement-breakpoint
ALTER TABLE "messages" DROP CONSTRAINT "messages_channel";--> statement-breakpoint
ALTER TABLE "subscribers" DROP CONSTRAINT "subscribers_one_address";--> statement-breakpoint
ALTER TABLE "subscribers" ADD COLUMN "robot_kind" text;--> statement-breakpoint
ALTER TABLE "subscribers" ADD COLUMN "robot_url" text;--> statement-breakpoint
ALTER TABLE "subscribers" ADD COLUMN "robot_secret" text;--> statement-breakpoint
ALTER TABLE "subscribers" ADD CONSTRAINT "subscribers_robot_url_unique" UNIQUE("robot_url");--> statement-breakpoint
ALTER TABLE "deliveries" ADD CONSTRAINT "deliveries_channel" CHECK ("deliveries"."channel" IN ('email', 'webhook', 'robot'));--> statement-breakpoint
ALTER TABLE "messages" ADD CONSTRAINT "messages_channel" CHECK ("messages"."channel" IN ('email', 'webhook', 'robot'));--> statement-breakpoint
ALTER TABLE "subscribers" ADD CONSTRAINT "subscribers_robot_format" CHECK ("subscribers"."robot_url" IS NULL OR "subscribers"."robot_url" ~ '^https?://[^/@[:space:]]+(/[^[:space:]]*)?$');--> statement-breakpoint
ALTER TABLE "subscribers" ADD CONSTRAINT "subscribers_robot_kind" CHECK (("subscribers"."robot_url" IS NULL) = ("subscribers"."robot_kind" IS NULL) AND ("subscribers"."robot_kind" IS NULL OR "subscribers"."robot_kind" IN ('wecom', 'dingtalk', 'feishu')));--> statement-breakpoint
ALTER TABLE "subscribers" ADD CONSTRAINT "subscribers_robot_secret" CHECK ("subscribers"."robot_secret" IS NULL OR ("subscribers"."robot_kind" IN ('dingtalk', 'feishu') AND length(btrim("subscribers"."robot_secret")) > 0));--> statement-breakpoint
ALTER TABLE "subscribers" ADD CONSTRAINT "subscribers_one_address" CHECK (num_nonnulls("subscribers"."email", "subscribers"."webhook_url", "subscribers"."robot_url") = 1);