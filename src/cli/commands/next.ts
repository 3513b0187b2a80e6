/** `idd next`: numbers over Kafka, asked like any client asks, printed one a line (or the reply as JSON). */
import { type Command, InvalidArgumentError } from "commander";
import { IdClient } from "../../client/id-client.js";
import type { IdReply } from "../../protocol/reply.js";
import { positive } from "../arguments.js";
import { commandConfig } from "../load-config.js";
import { EXIT, say } from "../output.js";

/** `--field name=value`, repeatable: collected into the request's fields. */
const field = (v: string, fields: Record<string, string> = {}) => {
  const eq = v.indexOf("=");
  const name = v.slice(0, eq);
  if (eq < 1) throw new InvalidArgumentError(`write name=value (got "${v.slice(0, 40)}")`);
  if (Object.hasOwn(fields, name)) throw new InvalidArgumentError(`field "${name.slice(0, 40)}" given twice`);
  return { ...fields, [name]: v.slice(eq + 1) };
};

/** A reply as one JSON line, every BigInt (ranges, issuedAt) as a string of its exact digits. */
const replyLine = (r: IdReply) => JSON.stringify(r, (_k, v: unknown) => (typeof v === "bigint" ? v.toString() : v));

interface NextOptions {
  count: number;
  timeout: number;
  avro?: boolean;
  json?: boolean;
  field?: Record<string, string>;
}

export function addNextCommand(program: Command): void {
  program
    .command("next")
    .argument("<sequence>")
    .option("--count <n>", "how many numbers", positive, 1)
    .option("--field <name=value>", "a value for the sequence's {field:name} (formatted sequences); repeat for each field", field)
    .option("--timeout <ms>", "how long to wait for the reply", positive, 10_000)
    .option("--avro", "send the request as Avro through the schema registry instead of JSON")
    .option("--json", "print the whole reply as one JSON line (numbers as strings of exact digits), error replies too")
    .description("ask idd for numbers over Kafka, like any client, and print what the sequence issues, one a line")
    .addHelpText(
      "after",
      `
Prints the reply's formatted values for sequences that print them (formatted, obfuscated), else its
numbers; a reply with more than IDD_MAX_FORMATTED values carries numbers only (said on stderr). The
period, for sequences that restart, goes to stderr.
--json prints the reply instead: {"requestId","sequence","period","status","ranges":[{"first","last"}],
"formatted","formattedOmitted","error","issuedAt"}, with first, last and issuedAt as digit strings.
Exit codes: 0 numbers issued, 2 error reply (its code on stderr, and in the JSON with --json), no reply, or usage.`,
    )
    .action(async (sequence: string, o: NextOptions) => {
      const c = await commandConfig();
      const client = await IdClient.connect({
        brokers: c.services.kafkaBrokers,
        kafkaSecurity: c.services.security.kafka,
        requestTopic: c.requestTopic,
        timeoutMs: o.timeout,
        format: o.avro ? "avro" : "json",
        schemaRegistryUrl: c.services.schemaRegistryUrl,
        schemaRegistrySecurity: c.services.security.registry,
      });
      try {
        const opts = o.field ? { fields: o.field } : {};
        if (o.json) {
          const r = await client.reply(sequence, o.count, opts);
          process.stdout.write(`${replyLine(r)}\n`);
          if (r.error) say(`${r.error.code}: ${r.error.message}`);
          process.exitCode = r.status === "OK" ? EXIT.ok : EXIT.error;
          return;
        }
        const r = await client.next(sequence, o.count, opts);
        if (r.period) say(`period ${r.period}`);
        if (r.formattedOmitted) say("the reply carries numbers only: more values than IDD_MAX_FORMATTED");
        const lines = r.formatted.length > 0 ? r.formatted : r.numbers.map(String);
        process.stdout.write(`${lines.join("\n")}\n`);
      } finally {
        await client.close({ deleteReplyTopic: true });
      }
    });
}
