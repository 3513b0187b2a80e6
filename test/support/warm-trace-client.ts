/** warm-trace.ts's client: one number of the sequence in argv[2] asked per line on stdin, printed a line each. */
import { createInterface } from "node:readline";
import { commandConfig } from "../../src/cli/load-config.js";
import { IdClient } from "../../src/client/id-client.js";

const c = await commandConfig();
const client = await IdClient.connect({ brokers: c.services.kafkaBrokers, requestTopic: c.requestTopic, timeoutMs: 5_000 });
for await (const _ of createInterface({ input: process.stdin })) {
  try {
    process.stdout.write(`${(await client.next(process.argv[2] as string)).numbers[0]}\n`);
  } catch (e) {
    process.stdout.write(`error ${(e as Error).message}\n`);
  }
}
await client.close({ deleteReplyTopic: true });
