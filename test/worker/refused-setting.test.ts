/**
 * A setting the brokers refuse for good (a session timeout below their group.min.session.timeout.ms,
 * 6000 ms by default, which idd's own range allows): the worker used to rejoin every second for
 * ever, logging errors and answering nothing. It now says which setting, with CONFIG_INVALID, and
 * `idd worker` exits 2 as for any bad configuration.
 */
import { randomUUID } from "node:crypto";
import { afterAll, expect, inject, test } from "vitest";
import { ownDatabase, serviceEnv, startWorker, stopWorker, type WorkerProcess } from "../support/workers.js";

const services = ownDatabase(inject("services"), "refused");
const run = randomUUID().slice(0, 8);
let worker: WorkerProcess | undefined;

afterAll(async () => {
  if (worker) await stopWorker(worker, "SIGKILL");
});

test("a session timeout the brokers refuse: CONFIG_INVALID naming it, and the worker exits 2", async () => {
  worker = startWorker(`refused-${run}`, {
    ...serviceEnv(services),
    IDD_REQUEST_TOPIC: `refused.${run}.requests`,
    IDD_DLQ_TOPIC: `refused.${run}.dlq`,
    IDD_GROUP_ID: `refused-${run}`,
    IDD_SESSION_TIMEOUT_MS: "4000",
  });
  const w = worker;
  const code = await Promise.race([w.exited, new Promise<"running">((r) => setTimeout(() => r("running"), 60_000))]);
  const refused = w.log.filter((l) => l.includes('"code":"CONFIG_INVALID"'));
  expect(code, w.log.slice(-5).join("\n")).toBe(2);
  expect(refused.length).toBe(1);
  expect(refused[0]).toContain("IDD_SESSION_TIMEOUT_MS=4000");
  expect(w.log.filter((l) => l.includes("rejoining as a new member"))).toEqual([]);
}, 90_000);
