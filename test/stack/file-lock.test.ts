/**
 * The lock between processes (stack/proc.ts takeFileLock) that keeps one network-fault run per
 * machine and one cluster test at a time: a second taker waits while a live process holds it, takes
 * it once released, and takes over one left by a process that is gone; and the install cache
 * shared by checkouts, built by one process at a time.
 */
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, expect, test } from "vitest";
import { installDir } from "../../stack/install.js";
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

test("a cached service built by another process meanwhile is not built again; callers in one process share a build", async () => {
  const target = join(dir, "service");
  const lock = `${target}.lock`;
  // Another checkout builds it: holds the target's lock for 1 s, then puts the target in place and releases.
  const other = spawn(process.execPath, [
    "-e",
    `const fs = require("fs"); fs.writeFileSync(${JSON.stringify(lock)}, process.pid + "\\n", { flag: "wx" });
     setTimeout(() => { fs.mkdirSync(${JSON.stringify(target)}); fs.writeFileSync(${JSON.stringify(join(target, "by"))}, "other"); fs.rmSync(${JSON.stringify(lock)}); }, 1000);`,
  ]);
  while (!existsSync(lock) || !readFileSync(lock, "utf8").trim()) await sleep(20);
  let builds = 0;
  const build = async (tmp: string) => {
    builds++;
    writeFileSync(join(tmp, "by"), "us");
    await sleep(300);
  };
  await Promise.all([installDir(target, build), installDir(target, build)]);
  expect(builds).toBe(0);
  expect(readFileSync(join(target, "by"), "utf8")).toBe("other");
  other.kill();

  const fresh = join(dir, "fresh");
  await Promise.all([installDir(fresh, build), installDir(fresh, build), installDir(fresh, build)]);
  expect(builds).toBe(1);
  expect(readFileSync(join(fresh, "by"), "utf8")).toBe("us");
  expect(existsSync(`${fresh}.lock`)).toBe(false);
});
