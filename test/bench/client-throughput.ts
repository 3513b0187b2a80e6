/**
 * The client section of `npm run bench` (`--only client`): how many requests a second one IdClient
 * drives with many next() calls in flight, against the echo service (3 processes; its replies are
 * valid IdReply JSON), so the client, not idd, is what is measured. Each of `inFlight` loops calls
 * next() again as soon as its previous call returned.
 */
import { randomUUID } from "node:crypto";
import { IdClient } from "../../src/client/id-client.js";
import type { ServiceSettings } from "../../src/config/services.js";
import { isIddError } from "../../src/core/errors.js";
import { ServedAdmin } from "../../stack/kafka-admin.js";
import { spreadSequences } from "./load-generator.js";
import { cpuOf } from "./proc-cpu.js";
import type { StackPids } from "./stack-pids.js";
import { startEchoPool } from "./targets.js";

export interface ClientOptions {
  /** Concurrent next() loops, one measurement each, e.g. [2000]. */
  inFlight: number[];
  seconds: number;
  partitions: number;
  processes: number;
}

export interface ClientMeasured {
  inFlight: number;
  reqPerS: number;
  p50: number;
  p99: number;
  errors: Record<string, number>;
  /** CPU seconds per 10,000 requests: this process (the client), the echo processes, the broker. */
  cpu: { client: number; echo: number; broker: number | undefined };
}

export async function clientThroughput(
  services: ServiceSettings,
  pids: StackPids,
  say: (line: string) => void,
  o: ClientOptions,
): Promise<ClientMeasured[]> {
  const run = randomUUID().slice(0, 8);
  const topic = `bench.${run}.client.requests`;
  const admin = new ServedAdmin(services.kafkaBrokers, "bench-client-section");
  await admin.createTopics([{ topic, partitions: o.partitions }]);
  const echo = await startEchoPool(services.kafkaBrokers, topic, o.partitions, o.processes);
  const client = await IdClient.connect({ brokers: services.kafkaBrokers, requestTopic: topic, timeoutMs: 30_000 });
  const sequences = spreadSequences(`cl-${run}`, o.partitions, 2);
  say(`client: one IdClient, ${o.inFlight.join(" / ")} next() calls in flight, ${o.seconds} s each, against ${o.processes} echo processes`);
  const out: ClientMeasured[] = [];
  try {
    for (const inFlight of o.inFlight) {
      const measure = async (seconds: number): Promise<ClientMeasured> => {
        const latencies: number[] = [];
        const errors: Record<string, number> = {};
        const cpu0 = { client: process.cpuUsage(), echo: cpuOf(echo.pids), broker: pids.kafka ? cpuOf([pids.kafka]) : undefined };
        const t0 = performance.now();
        const until = t0 + seconds * 1000;
        await Promise.all(
          Array.from({ length: inFlight }, async (_, i) => {
            let n = i;
            while (performance.now() < until) {
              const t = performance.now();
              try {
                await client.next(sequences[n++ % sequences.length] as string);
                latencies.push(performance.now() - t);
              } catch (e) {
                const code = isIddError(e) ? e.code : "UNTYPED";
                errors[code] = (errors[code] ?? 0) + 1;
              }
            }
          }),
        );
        const elapsed = (performance.now() - t0) / 1000;
        const c = process.cpuUsage(cpu0.client);
        latencies.sort((a, b) => a - b);
        const k = 10_000 / Math.max(1, latencies.length);
        return {
          inFlight,
          reqPerS: latencies.length / elapsed,
          p50: latencies[Math.floor(latencies.length / 2)] ?? Number.NaN,
          p99: latencies[Math.floor(latencies.length * 0.99)] ?? Number.NaN,
          errors,
          cpu: {
            client: ((c.user + c.system) / 1e6) * k,
            echo: (cpuOf(echo.pids) - cpu0.echo) * k,
            broker: cpu0.broker === undefined ? undefined : (cpuOf([pids.kafka as number]) - cpu0.broker) * k,
          },
        };
      };
      await measure(Math.min(3, o.seconds)); // warm-up
      const m = await measure(o.seconds);
      out.push(m);
      const errs = Object.entries(m.errors).map(([k, v]) => `${k} ${v}`);
      say(
        `  IdClient, ${String(inFlight).padStart(5)} in flight: ${m.reqPerS.toFixed(0).padStart(7)} req/s   p50 ${m.p50.toFixed(1)} ms   ` +
          `p99 ${m.p99.toFixed(1)} ms   cpu s/10k: client ${m.cpu.client.toFixed(2)}, echo ${m.cpu.echo.toFixed(2)}, ` +
          `kafka ${m.cpu.broker?.toFixed(2) ?? "-"}   errors: ${errs.length > 0 ? errs.join(", ") : "none"}`,
      );
    }
  } finally {
    await client.close({ deleteReplyTopic: true });
    await echo.stop();
    await admin.deleteTopics([topic]);
    await admin.close();
  }
  return out;
}
