// Preloaded with NODE_OPTIONS="--import …/cpu-profile.mjs" (node refuses --cpu-prof there): samples
// the process's CPU with the inspector's profiler, and its allocations with the sampling heap
// profiler (every 64 KiB, objects already collected included: what the process allocates, not what
// it keeps), and writes a .cpuprofile and a .heapprofile to BENCH_CPU_PROFILE_DIR when the process
// exits (the exit handler runs the inspector synchronously).
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
      session.post("HeapProfiler.enable");
      session.post("HeapProfiler.startSampling", {
        samplingInterval: 65536,
        includeObjectsCollectedByMajorGC: true,
        includeObjectsCollectedByMinorGC: true,
      });
    },
    Number(process.env.BENCH_CPU_PROFILE_DELAY_MS ?? 3000),
  );
  start.unref();
  process.on("exit", () => {
    const name = `${process.env.ECHO_ID ?? process.env.IDD_WORKER_ID ?? "node"}-${process.pid}`;
    session.post("Profiler.stop", (err, r) => {
      if (err || !r) return;
      mkdirSync(dir, { recursive: true });
      writeFileSync(join(dir, `${name}.cpuprofile`), JSON.stringify(r.profile));
    });
    session.post("HeapProfiler.stopSampling", (err, r) => {
      if (err || !r) return;
      writeFileSync(join(dir, `${name}.heapprofile`), JSON.stringify(r.profile));
    });
  });
}
