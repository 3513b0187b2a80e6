/**
 * SIGTERM to a worker whose Kafka is gone: the stop waits on kafkajs's commit, leave and
 * reconnects, and used to take as long as their retries (18 s against a refused port, up to the
 * request timeout against a silent one), past a supervisor's grace period. It now ends within
 * IDD_STOP_TIMEOUT_MS: STOP_TIMEOUT at warn, exit 1, as a kill would (design §5.2).
 * The broker is frozen (SIGSTOP), not killed: a killed broker refuses at once, and kafkajs then
 * sometimes gives up inside the timeout and the worker exits 0, so the timeout this test is about
 * was not always reached. A frozen one still accepts connections (the kernel completes them) and
 * never answers, the silent case, every run. The broker is the test's own, so freezing it costs
 * no other test its Kafka.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, expect, inject, test } from "vitest";
import { layoutFromEnv, pidFile } from "../../stack/paths.js";
import { portFree } from "../../stack/proc.js";
import { down, up } from "../../stack/stack.js";
import { ownDatabase, serviceEnv, startWorker, stopWorker, type WorkerProcess } from "../support/workers.js";

const dir = mkdtempSync(join(tmpdir(), "idd-kafka-gone-"));
let worker: WorkerProcess | undefined;
let layout: ReturnType<typeof layoutFromEnv> | undefined;
let frozen: number | undefined;

afterAll(async () => {
  if (worker) await stopWorker(worker, "SIGKILL");
  if (frozen) process.kill(frozen, "SIGKILL");
  if (layout) await down({ layout, services: ["kafka"] });
  rmSync(dir, { recursive: true, force: true });
});

/**
 * A port base whose three Kafka ports (client, controller, SASL) are free: below the kernel's
 * ephemeral range (32768 and up), where a client connection's own port can take one between this
 * check and the start (CI saw 37594, the SASL port, taken), and clear of the other private stacks
 * (stack-cli tests 30000–30299, chaos 31000, cluster 32000).
 */
async function freeBase(): Promise<number> {
  for (let base = 30400 + (process.pid % 5) * 100; base < 31000; base += 100) {
    const { kafka, kafkaController, kafkaSasl } = layoutFromEnv({ IDD_STACK_PORT_BASE: String(base) }).ports;
    if ((await portFree(kafka)) && (await portFree(kafkaController)) && (await portFree(kafkaSasl))) return base;
  }
  throw new Error("no free port base for a private Kafka");
}

test("a worker told to stop with its Kafka gone exits within IDD_STOP_TIMEOUT_MS, saying STOP_TIMEOUT", async () => {
  layout = layoutFromEnv({ ...process.env, IDD_STACK_DIR: dir, IDD_STACK_PORT_BASE: String(await freeBase()) });
  await up({ layout, services: ["kafka"] });
  const services = { ...ownDatabase(inject("services"), "gone"), kafkaBrokers: [`127.0.0.1:${layout.ports.kafka}`] };
  worker = startWorker("kafka-gone", { ...serviceEnv(services), IDD_STOP_TIMEOUT_MS: "3000" });
  const w = worker;
  await w.assigned;
  frozen = Number(readFileSync(pidFile(layout, "kafka"), "utf8").trim());
  process.kill(frozen, "SIGSTOP");
  await new Promise((r) => setTimeout(r, 1000));
  const t0 = performance.now();
  const code = await stopWorker(w);
  const took = performance.now() - t0;
  expect(took, w.log.slice(-5).join("\n")).toBeLessThan(3000 + 2500);
  expect(code).toBe(1);
  const timedOut = w.log.filter((l) => l.includes('"code":"STOP_TIMEOUT"'));
  expect(timedOut).toHaveLength(1);
  expect(timedOut[0]).toContain('"level":40');
}, 120_000);
