import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { expect, test } from "vitest";
import { SERVICE_VARS } from "../src/config/services.js";
import { ensureDebianPackage } from "../stack/install.js";
import { IMAGES, layoutFromEnv, REPO_ROOT, VERSIONS } from "../stack/paths.js";

/**
 * `docker compose config` (JSON) when the plugin is there, else Debian's docker-compose 1.x
 * (installed on first use), whose `config` prints YAML and knows no --format.
 */
async function composeConfig(file: string): Promise<string> {
  const plugin = spawnSync("docker", ["compose", "version"]).status === 0;
  const cmd = plugin ? "docker" : await ensureDebianPackage(layoutFromEnv(), "docker-compose", "docker-compose", () => {});
  const args = plugin ? ["compose", "-f", file, "config", "--format", "json"] : ["-f", file, "config"];
  const r = spawnSync(cmd, args, { encoding: "utf8" });
  expect(r.stderr).toBe("");
  expect(r.status).toBe(0);
  return r.stdout;
}

test("docker-compose.yml parses, runs three idd workers and gives them every service variable idd reads", async () => {
  const services = parseServices(await composeConfig(join(REPO_ROOT, "docker-compose.yml")));
  expect(Object.keys(services).sort()).toEqual(["idd-1", "idd-2", "idd-3", "kafka", "mongodb", "redis", "registry"]);
  for (const worker of ["idd-1", "idd-2", "idd-3"]) {
    for (const v of SERVICE_VARS) expect(services[worker]).toContain(v);
  }
}, 180_000);

/**
 * docker-compose.yml's `image:` of each service, read from the file as data (services at two spaces
 * of indentation under `services:`, their keys at four); the worker anchor's image is idd's own.
 */
function composeImages(yaml: string): Record<string, string> {
  const images: Record<string, string> = {};
  let service: string | undefined;
  let inServices = false;
  for (const line of yaml.split("\n")) {
    if (/^\S/.test(line)) inServices = line.startsWith("services:");
    if (!inServices) continue;
    const name = /^ {2}([\w-]+):\s*(\*\S+)?\s*$/.exec(line);
    if (name) service = name[1];
    const image = /^ {4}image:\s*["']?([^"'\s]+)/.exec(line);
    if (image && service) images[service] = image[1] as string;
  }
  return images;
}

test("docker-compose.yml runs the images of the stack's versions: Kafka, Apicurio, and Redis's and MongoDB's current lines", () => {
  const images = composeImages(readFileSync(join(REPO_ROOT, "docker-compose.yml"), "utf8"));
  expect(images).toEqual({ kafka: IMAGES.kafka, redis: IMAGES.redis, mongodb: IMAGES.mongodb, registry: IMAGES.registry });
  expect(IMAGES.kafka).toBe(`apache/kafka:${VERSIONS.kafka}`);
  expect(IMAGES.registry).toBe(`apicurio/apicurio-registry:${VERSIONS.apicurio}`);
});

/** Service name → its printed block; works on both JSON (plugin) and YAML (1.x) output. */
function parseServices(out: string): Record<string, string> {
  if (out.trimStart().startsWith("{")) {
    const j = JSON.parse(out) as { services: Record<string, unknown> };
    return Object.fromEntries(Object.entries(j.services).map(([k, v]) => [k, JSON.stringify(v)]));
  }
  const body = out.split(/^services:\n/m)[1]?.split(/^\S/m)[0] ?? "";
  const blocks: Record<string, string> = {};
  for (const part of body.split(/^ {2}(?=\S)/m).filter(Boolean)) {
    const name = part.slice(0, part.indexOf(":"));
    blocks[name] = part;
  }
  return blocks;
}
