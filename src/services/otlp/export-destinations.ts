import { inArray, sql } from "drizzle-orm";
import { namespaces, otlpExports } from "#db/schema/index.ts";
import type { Config, OtlpDestination, OtlpProtocol } from "~/lib/server/env.ts";
import type { ServiceContext } from "~/services/context.ts";
import { openHeaders } from "./sealed-headers.ts";

/** Where a namespace's spans go: its own collector, the server-wide one, or nowhere (destination null). */
export type NamespaceExport = {
  namespaceId: string;
  /** For the link back to each request. */
  namespaceName: string;
  destination: (OtlpDestination & { source: "namespace" | "server" }) | null;
  /** A namespace's own settings whose headers cannot be read (SESSION_SECRET changed): nothing is sent until saved again. */
  problem: string | null;
};

/** A collector's base URL gets the traces path; a URL already ending in /v1/traces is used as it is. */
export function tracesUrl(endpoint: string): string {
  const url = new URL(endpoint);
  if (!url.pathname.replace(/\/+$/, "").endsWith("/v1/traces")) url.pathname = `${url.pathname.replace(/\/+$/, "")}/v1/traces`;
  return url.toString();
}

export const defaultOtlpTimeoutMs = 10_000;

type Row = {
  namespaceId: string;
  name: string;
  endpoint: string | null;
  protocol: string | null;
  isEnabled: boolean | null;
  headersSealed: string | null;
};

function destinationOf(row: Row, config: Pick<Config, "otlp" | "sessionSecret">): NamespaceExport {
  const base = { namespaceId: row.namespaceId, namespaceName: row.name };
  if (row.endpoint === null) {
    return { ...base, destination: config.otlp ? { ...config.otlp, source: "server" } : null, problem: null };
  }
  if (!row.isEnabled || !row.endpoint) return { ...base, destination: null, problem: null };
  const headers = openHeaders(config.sessionSecret, row.headersSealed ?? "");
  if (!headers)
    return { ...base, destination: null, problem: "the saved headers cannot be read any more (SESSION_SECRET changed): save them again" };
  return {
    ...base,
    destination: {
      url: tracesUrl(row.endpoint),
      headers,
      protocol: (row.protocol === "http/json" ? "http/json" : "http/protobuf") satisfies OtlpProtocol,
      timeoutMs: config.otlp?.timeoutMs ?? defaultOtlpTimeoutMs,
      source: "namespace",
    },
    problem: null,
  };
}

/** Where each of these namespaces' spans go now (a deleted namespace is absent from the answer). */
export async function loadExportDestinations({
  ctx,
  namespaceIds,
}: {
  ctx: ServiceContext;
  namespaceIds: readonly string[];
}): Promise<Map<string, NamespaceExport>> {
  const out = new Map<string, NamespaceExport>();
  for (let i = 0; i < namespaceIds.length; i += 500) {
    const chunk = namespaceIds.slice(i, i + 500);
    const rows = await ctx.db
      .select({
        namespaceId: namespaces.id,
        name: namespaces.name,
        endpoint: otlpExports.endpoint,
        protocol: otlpExports.protocol,
        isEnabled: otlpExports.isEnabled,
        headersSealed: otlpExports.headersSealed,
      })
      .from(namespaces)
      .leftJoin(otlpExports, sql`${otlpExports.namespaceId} = ${namespaces.id}`)
      .where(inArray(namespaces.id, chunk));
    for (const row of rows) out.set(row.namespaceId, destinationOf(row, ctx.config));
  }
  return out;
}

/** Whether any namespace has settings of its own: without them and without a server-wide collector, nothing is exported. */
export async function hasNamespaceExports({ ctx }: { ctx: ServiceContext }): Promise<boolean> {
  const [row] = await ctx.db.select({ one: otlpExports.namespaceId }).from(otlpExports).limit(1);
  return row !== undefined;
}
