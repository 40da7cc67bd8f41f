CREATE TABLE "otlp_exports" (
	"namespace_id" uuid PRIMARY KEY NOT NULL,
	"endpoint" text NOT NULL,
	"protocol" text DEFAULT 'http/protobuf' NOT NULL,
	"is_enabled" boolean DEFAULT true NOT NULL,
	"header_names" text[] DEFAULT '{}' NOT NULL,
	"headers_sealed" text DEFAULT '' NOT NULL,
	"updated_by_user_id" uuid,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "otlp_exports" ADD CONSTRAINT "otlp_exports_namespace_id_namespaces_id_fk" FOREIGN KEY ("namespace_id") REFERENCES "public"."namespaces"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "otlp_exports" ADD CONSTRAINT "otlp_exports_updated_by_user_id_users_id_fk" FOREIGN KEY ("updated_by_user_id") REFERENCES "public"."users"("id") ON DELETE set null ON UPDATE no action;