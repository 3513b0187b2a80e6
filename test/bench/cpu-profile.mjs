// Preloaded with NODE_OPTIONS="--import …/cpu-profile.mjs" (node refuses --cpu-prof there): samples
// the process's CPU with the inspector's profiler and writes a .cpuprofile to
// BENCH_CPU_PROFILE_DIR when the process exits (the exit handler runs the inspector synchronously).
import { mkdirSync, writeFileSync } from "node:fs";
import { Session } from "node:inspector";
import { join } from "node:path";

const dir = process.env.BENCH_CPU_PROFILE_DIR;
if (dir) {
  const session = new Session();
  session.connect();
  // Started once the process is up, so the profile shows its work rather than its start-up.
  const start = setTimeout(
    () => {
      session.post("Profiler.enable");
      session.post("Profiler.setSamplingInterval", { interval: 1000 });
      session.post("Profiler.start");
    },
    Number(process.env.BENCH_CPU_PROFILE_DELAY_MS ?? 3000),
  );
  start.unref();
  process.on("exit", () => {
    session.post("Profiler.stop", (err, r) => {
      if (err || !r) return;
      mkdirSync(dir, { recursive: true });
      const name = `${process.env.ECHO_ID ?? process.env.IDD_WORKER_ID ?? "node"}-${process.pid}.cpuprofile`;
      writeFileSync(join(dir, name), JSON.stringify(r.profile));
    });
  });
}
