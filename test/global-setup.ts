/**
 * Brings the real services up once per test run and hands their settings to the tests:
 * - all four of KAFKA_BROKERS, REDIS_URL, MONGODB_URL, SCHEMA_REGISTRY_URL set: those services, nothing started;
 * - else a Docker engine reachable: testcontainers (real Kafka, Redis, MongoDB and Apicurio images);
 * - else the local stack (`npm run stack -- up`), no Docker needed.
 * IDD_TEST_SERVICES=stack|containers forces one of the last two. Whatever this setup started, it stops.
 * It also installs Debian's Chromium when missing (first run only), for the status page's browser test.
 * The cluster profile (3 Kafka brokers, Sentinels, a Redis Cluster) is started by the tests that use
 * it, in a folder of its own (test/support/cluster-stack.ts); a run that found it stopped stops it.
 */
import { existsSync, readFileSync } from "node:fs";
import type {} from "vitest";
import type { TestProject } from "vitest/node";
import { redactUrl } from "../src/config/secret.js";
import { fromVars, type ServiceSettings, serviceSettings } from "../src/config/services.js";
import { errorLines } from "../src/core/errors.js";
import { parseEnvFile } from "../stack/env-file.js";
import { ensureChromium } from "../stack/install.js";
import { CLUSTER_SERVICE_NAMES, layoutFromEnv, SERVICE_NAMES } from "../stack/paths.js";
import { securedEnvFile } from "../stack/secrets.js";
import { down, up } from "../stack/stack.js";
import { clusterLayout, clusterRuns } from "./support/cluster-stack.js";
import { dockerEngineReachable, startContainers } from "./support/containers.js";

declare module "vitest" {
  export interface ProvidedContext {
    services: ServiceSettings;
    /**
     * The local stack's secured endpoints as idd variables (stack/secrets.ts). Null only when the
     * services come from elsewhere (the environment without a stack folder, testcontainers): the
     * secured tests then skip, and the setup says so. A local stack without them fails the setup.
     */
    secured: Record<string, string> | null;
    /** The headless browser for test/ops/status.test.ts, or why there is none. */
    chromium: { path?: string; problem?: string };
  }
}

/** The secured endpoints of the local stack in IDD_STACK_DIR (or .stack), when it wrote them. */
function securedFromStack(): Record<string, string> | null {
  const file = securedEnvFile(layoutFromEnv());
  return existsSync(file) ? parseEnvFile(readFileSync(file, "utf8")) : null;
}

const log = (line: string) => process.stderr.write(`test setup: ${line}\n`);

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  // The cluster profile is started by the tests that want it (test/support/cluster-stack.ts); a run
  // that found it stopped stops it again at the end.
  const cluster = clusterLayout();
  const clusterWasRunning = clusterRuns(cluster);
  const teardown = await services(project);
  return async () => {
    await teardown();
    if (clusterWasRunning) return;
    const stopped = await down({ layout: cluster, services: CLUSTER_SERVICE_NAMES });
    if (stopped.length > 0) log(`stopped the cluster profile (${stopped.join(", ")})`);
  };
}

async function services(project: TestProject): Promise<() => Promise<void>> {
  const mode = process.env.IDD_TEST_SERVICES;
  const fromEnv = mode ? undefined : serviceSettingsFromEnvOnly();
  if (fromEnv) {
    log(
      `using the services in the environment (${fromEnv.kafkaBrokers.join(",")}, ${[fromEnv.redisUrl, fromEnv.mongodbUrl, fromEnv.schemaRegistryUrl].map(redactUrl).join(", ")})`,
    );
    project.provide("services", fromEnv);
    const secured = securedFromStack();
    project.provide("secured", secured);
    if (!secured) log("no local stack's secured endpoints next to these services: the secured tests skip");
    project.provide("chromium", await browser());
    return async () => {};
  }
  if (mode === "containers" || (mode !== "stack" && (await dockerEngineReachable()))) {
    log("Docker engine found: starting the services with testcontainers");
    const c = await startContainers();
    project.provide("services", c.settings);
    project.provide("secured", null);
    log("testcontainers has no secured endpoints: the secured tests skip");
    project.provide("chromium", await browser());
    return c.stop;
  }
  const t0 = Date.now();
  const r = await up({ progress: (l) => log(l) });
  log(`local stack up in ${((Date.now() - t0) / 1000).toFixed(1)}s (started: ${r.started.join(", ") || "none, all were running"})`);
  project.provide("services", fromVars(r.env, "local stack"));
  const secured = securedFromStack();
  if (!secured) throw new Error(`the local stack wrote no ${securedEnvFile(layoutFromEnv())}: its secured endpoints are missing`);
  project.provide("secured", secured);
  project.provide("chromium", await browser()); // after the stack: apt-get runs one at a time
  return async () => {
    // Stop only what this run started: a stack the developer had running stays up.
    const stopped = await down({ services: r.started.filter((s) => SERVICE_NAMES.includes(s)) });
    if (stopped.length > 0) log(`stopped ${stopped.join(", ")}`);
  };
}

/** Installs Chromium like the stack's redis-server (apt-get, first run only); a failure fails only the browser test. */
async function browser(): Promise<{ path?: string; problem?: string }> {
  try {
    return { path: await ensureChromium(layoutFromEnv(), (l) => log(l)) };
  } catch (e) {
    const problem = errorLines(e).join("; ");
    log(`no browser for the status page test: ${problem}`);
    return { problem };
  }
}

function serviceSettingsFromEnvOnly(): ServiceSettings | undefined {
  // Only real environment variables count here; a stack env file is not a user's configuration.
  return serviceSettings(process.env);
}
