/** `idd replay`: rebuilds Redis counters from MongoDB, trusting the larger of Redis and MongoDB. */
import type { Command } from "commander";
import { replay } from "../../recovery/replay.js";
import { createRedis, redisConnected, redisTarget } from "../../redis/client.js";
import { Store } from "../../storage/store.js";
import { positive } from "../arguments.js";
import { commandConfig } from "../load-config.js";
import { EXIT, say } from "../output.js";

interface ReplayOptions {
  sequence?: string[];
  dryRun?: boolean;
  settleMs: number;
}

export function addReplayCommand(program: Command): void {
  program
    .command("replay")
    .description("rebuild Redis cur/max of every counter (or of --sequence ones) from MongoDB, e.g. after STATE_CONFLICT")
    .option("--sequence <name...>", "only these sequences (every period)")
    .option("--dry-run", "read and print, per counter, what would change; change nothing")
    .option("--settle-ms <ms>", "wait after fencing before reading MongoDB", (v) => positive(v), 500)
    .addHelpText(
      "after",
      `
Safe while workers run: each counter is fenced while it is rewritten (claims wait), and cur and max
only ever move forward. Run it again and nothing changes but the fence epochs. Workers restore a
counter Redis lost by themselves; replay is for what they refuse (STATE_CONFLICT: Redis ahead of
MongoDB): it trusts the larger of both, so run it only knowing MongoDB is complete.
Exit codes: 0 done (or dry run printed), 1 some counters could not be restored, 2 could not run.`,
    )
    .action(async (o: ReplayOptions) => {
      const c = await commandConfig();
      const target = redisTarget(c.services);
      const redis = createRedis(target, { options: { maxRetriesPerRequest: 2 } });
      const store = new Store(c.services.mongodbUrl);
      try {
        await redisConnected(redis, target, 5000);
        const r = await replay(redis, store, {
          sequences: o.sequence,
          dryRun: o.dryRun,
          settleMs: o.settleMs,
          progress: (l) => say(`replay: ${l}`),
          actor: `replay@${c.workerId}`,
        });
        for (const plan of r.plans) {
          if (!o.dryRun && plan.change === "none") continue;
          const before = plan.before.cur === null ? "absent" : `cur=${plan.before.cur} max=${plan.before.max}`;
          process.stdout.write(
            `${plan.key}\t${plan.change}\t${before} -> cur=${plan.cur} max=${plan.max} epoch=${plan.epoch} (from ${plan.source})\n`,
          );
        }
        say(
          `replay${o.dryRun ? " (dry run, nothing changed)" : ""}: ${r.counters} counters (${r.created} created, ${r.raised} raised, ${r.unchanged} unchanged), ${r.failed.length} failed; read ${r.reservationRecords} reservation and ${r.grantRecords} grant records in ${(r.ms / 1000).toFixed(1)}s`,
        );
        for (const f of r.failed) say(`failed: ${f.key}: ${f.error}`);
        process.exitCode = r.failed.length > 0 ? EXIT.notAllGood : EXIT.ok;
      } finally {
        redis.disconnect();
        await store.close();
      }
    });
}
