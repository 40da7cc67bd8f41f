import { expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { parseConfig } from "~/lib/server/env.ts";

// The cluster's deployment files are configuration a user copies: each server node's environment must be one the
// server accepts, and the names the files share (cluster, hosts, services) must agree.
const root = join(import.meta.dir, "../..");
const read = (path: string) => readFileSync(join(root, path), "utf8");

type ComposeService = { environment?: Record<string, string>; depends_on?: string[] };

test("compose: both server nodes start with a configuration the server accepts, on the cluster ClickHouse names, behind haproxy", () => {
  const compose = Bun.YAML.parse(read("deploy/compose/cluster.yaml")) as { services: Record<string, ComposeService> };
  const nodes = Object.entries(compose.services).filter(([name]) => name.startsWith("tapscope"));
  expect(nodes.map(([name]) => name)).toEqual(["tapscope1", "tapscope2"]);
  const clusterXml = read("deploy/compose/clickhouse/cluster.xml");
  const haproxy = read("deploy/compose/haproxy/haproxy.cfg");
  const urls = new Set<string>();
  for (const [name, service] of nodes) {
    const config = parseConfig({ ...service.environment, DATA_DIR: "/tmp/unused" });
    expect(config.brokerUrl).toBe("redis://redis:6379");
    expect(config.databaseUrl).toStartWith("postgres://");
    expect(clusterXml).toContain(`<${config.clickhouseCluster}>`);
    const chHost = new URL(config.clickhouseUrl!).hostname;
    expect(compose.services[chHost]).toBeDefined();
    expect(clusterXml).toContain(`<host>${chHost}</host>`);
    urls.add(config.clickhouseUrl!);
    expect(haproxy).toContain(`${name}:4000`);
  }
  // Each node talks to its own shard; both see the whole cluster through the Distributed tables.
  expect(urls.size).toBe(2);
});

test("kubernetes: the server Deployment's environment is accepted and names the Services the file defines", () => {
  const docs = read("deploy/kubernetes/cluster.yaml")
    .split(/^---$/m)
    .map((d) => Bun.YAML.parse(d) as { kind: string; metadata: { name: string }; spec: Record<string, unknown> } | null)
    .filter((d) => d !== null);
  const services = new Set(docs.filter((d) => d.kind === "Service").map((d) => d.metadata.name));
  const deployment = docs.find((d) => d.kind === "Deployment" && d.metadata.name === "tapscope")!;
  const container = (deployment.spec as { template: { spec: { containers: Array<{ env: Array<{ name: string; value?: string }> }> } } })
    .template.spec.containers[0]!;
  const env: Record<string, string> = { DATA_DIR: "/tmp/unused" };
  for (const e of container.env)
    env[e.name] = e.value ?? (e.name === "DATABASE_URL" ? "postgres://u:p@tapscope-postgres:5432/t" : "x".repeat(32));
  const config = parseConfig(env);
  expect(services.has(new URL(config.clickhouseUrl!).hostname)).toBe(true);
  expect(services.has(new URL(config.brokerUrl!).hostname)).toBe(true);
  expect(config.clickhouseCluster).toBe("tapscope");
  expect(read("deploy/kubernetes/cluster.yaml")).toContain("<tapscope>");
});
