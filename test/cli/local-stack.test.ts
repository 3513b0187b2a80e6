/**
 * `idd worker` (and `idd start`, the README's first command) with no service variable set: idd
 * loads the local stack's settings through stack/local-services.ts, whose Kafka admin loaded
 * kafkajs by a plain import. kafkajs then ran without idd's modules for the whole process (the
 * worker warned "kafkajs was loaded before idd"), so a batch it could not decode (a codec it lacks)
 * stopped its partition again. The stack now loads kafkajs through idd's seam.
 */

import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, expect, inject, test } from "vitest";
import { SERVICE_VARS } from "../../src/config/services.js";
import { runIdd } from "../support/cli.js";
import { ownDatabase, serviceEnv, startWorker, stopWorker, type WorkerProcess } from "../support/workers.js";

const services = ownDatabase(inject("services"), "localstack");
const run = randomUUID().slice(0, 8);
const stackDir = mkdtempSync(join(tmpdir(), "idd-local-stack-"));
let worker: WorkerProcess | undefined;

afterAll(async () => {
  if (worker) await stopWorker(worker, "SIGKILL");
  rmSync(stackDir, { recursive: true, force: true });
});

test("with nothing configured, a worker on the local stack's settings runs kafkajs with idd's modules, and answers", async () => {
  const vars = serviceEnv(services);
  writeFileSync(
    join(stackDir, "env"),
    `${Object.entries(vars)
      .map(([k, v]) => `${k}=${v}`)
      .join("\n")}\n`,
  );
  const env: NodeJS.ProcessEnv = {
    ...Object.fromEntries(SERVICE_VARS.map((k) => [k, undefined])),
    IDD_STACK_DIR: stackDir,
    IDD_REQUEST_TOPIC: `localstack.${run}.requests`,
    IDD_DLQ_TOPIC: `localstack.${run}.dlq`,
    IDD_GROUP_ID: `localstack-${run}`,
  };
  worker = startWorker(`localstack-${run}`, env);
  await worker.assigned;
  const sequence = `localstack-${run}`;
  expect((await runIdd(["seq", "create", sequence], env)).status).toBe(0);
  const next = await runIdd(["next", sequence, "--count", "3"], env);
  expect(next.stdout.trim().split("\n"), next.stderr).toEqual(["1", "2", "3"]);
  expect(worker.log.filter((l) => l.includes("services"))[0]).toContain(join(stackDir, "env"));
  expect(worker.log.filter((l) => l.includes("kafkajs was loaded before idd"))).toEqual([]);
}, 90_000);
