/**
 * The lock between processes (stack/proc.ts takeFileLock) that keeps one network-fault run per
 * machine and one cluster test at a time: a second taker waits while a live process holds it, takes
 * it once released, and takes over one left by a process that is gone.
 */
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, expect, test } from "vitest";
import { takeFileLock } from "../../stack/proc.js";

const dir = mkdtempSync(join(tmpdir(), "idd-lock-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

test("a second taker waits while another live process holds the lock, and gets it once released", async () => {
  const file = join(dir, "held.lock");
  // Another process holds it for 1.5 s, then removes it (as its release does).
  const holder = spawn(process.execPath, [
    "-e",
    `require("fs").writeFileSync(${JSON.stringify(file)}, process.pid + "\\n", { flag: "wx" }); setTimeout(() => require("fs").rmSync(${JSON.stringify(file)}), 1500);`,
  ]);
  while (!existsSync(file) || !readFileSync(file, "utf8").trim()) await sleep(20);
  const t0 = performance.now();
  let got = false;
  const taking = takeFileLock(file).then((release) => {
    got = true;
    return release;
  });
  await sleep(700);
  expect(got, "taken while another live process held it").toBe(false);
  const release = await taking;
  expect(performance.now() - t0).toBeGreaterThan(1000);
  expect(readFileSync(file, "utf8").trim()).toBe(String(process.pid));
  release();
  release(); // a second release removes nothing another process may hold by then
  expect(() => readFileSync(file)).toThrow(/ENOENT/);
  holder.kill();
});

test("a lock left by a process that is gone is taken over at once", async () => {
  const file = join(dir, "stale.lock");
  const gone = spawnSync(process.execPath, ["-e", "process.stdout.write(String(process.pid))"], { encoding: "utf8" });
  writeFileSync(file, `${gone.stdout}\n`);
  const t0 = performance.now();
  const release = await takeFileLock(file);
  expect(performance.now() - t0).toBeLessThan(1000);
  expect(readFileSync(file, "utf8").trim()).toBe(String(process.pid));
  release();
});
