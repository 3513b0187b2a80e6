/**
 * The process ids of the local stack's services (from its pid files), when the benchmark runs
 * against that stack: their CPU time is read from /proc. Services configured elsewhere have none.
 */
import { readFileSync } from "node:fs";
import type { ServiceSettings } from "../../src/config/services.js";
import { layoutFromEnv, pidFile, type ServiceName } from "../../stack/paths.js";
import { cpuSeconds } from "./proc-cpu.js";

export type StackPids = Partial<Record<ServiceName, number>>;

export function stackPids(services: ServiceSettings): StackPids {
  const layout = layoutFromEnv();
  // Only when the broker in use is the stack's: else the pid files describe some other stack.
  if (!services.kafkaBrokers.includes(`127.0.0.1:${layout.ports.kafka}`)) return {};
  const out: StackPids = {};
  for (const name of ["kafka", "redis", "mongodb"] as const) {
    try {
      const pid = Number(readFileSync(pidFile(layout, name), "utf8").trim());
      if (Number.isInteger(pid) && cpuSeconds(pid) !== undefined) out[name] = pid;
    } catch {
      // not running under this stack
    }
  }
  return out;
}
