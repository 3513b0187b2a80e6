/**
 * What the clients in examples/ need, made like the stack's services: once, then reused. The Java
 * example is built with Maven in its folder (again only when its pom or sources change); the Python
 * example's packages go into a venv under the stack folder (`<IDD_STACK_DIR>/venv`), filled with pip
 * and marked done with a copy of the requirements it holds, so an interrupted install is redone.
 */
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import { IddError } from "../src/core/errors.js";
import { aptGetInstall, ensureDebianPackage, installLog, type Progress, run, which } from "./install.js";
import { REPO_ROOT, type StackLayout } from "./paths.js";

export const SPRING_EXAMPLE = join(REPO_ROOT, "examples/java-spring");
export const PYTHON_EXAMPLE = join(REPO_ROOT, "examples/python");
export const GO_EXAMPLE = join(REPO_ROOT, "examples/go");
/** The NestJS client: TypeScript run with tsx, its packages (`@nestjs/*`, rxjs) in the project's devDependencies. */
export const NESTJS_EXAMPLE = join(REPO_ROOT, "examples/nestjs/client.ts");

function files(dir: string): string[] {
  return readdirSync(dir)
    .sort()
    .flatMap((f) => {
      const p = join(dir, f);
      return statSync(p).isDirectory() ? files(p) : [p];
    });
}

/** The digest of `sources` (paths under `dir`) and whether `artifact` was built from them (its stamp says so). */
function builtFrom(dir: string, sources: string[], artifact: string, stamp: string): { digest: string; fresh: boolean } {
  const hash = createHash("sha256");
  for (const f of sources) hash.update(`${relative(dir, f)}\0`).update(readFileSync(f));
  const digest = hash.digest("hex");
  return { digest, fresh: existsSync(artifact) && existsSync(stamp) && readFileSync(stamp, "utf8") === digest };
}

/** Builds examples/java-spring with Maven unless its jar was built from the same pom and sources; returns the jar. */
export async function buildSpringExample(l: StackLayout, progress: Progress): Promise<string> {
  const jar = join(SPRING_EXAMPLE, "target/idd-spring-client.jar");
  const stamp = join(SPRING_EXAMPLE, "target/idd-build.sha256");
  const { digest, fresh } = builtFrom(SPRING_EXAMPLE, [join(SPRING_EXAMPLE, "pom.xml"), ...files(join(SPRING_EXAMPLE, "src"))], jar, stamp);
  if (fresh) return jar;
  if (!which("mvn")) throw new IddError("STACK_TOOL_MISSING", "mvn (Apache Maven) not found on PATH: it builds examples/java-spring");
  progress("building examples/java-spring with Maven (first run and after changes only)");
  const t0 = Date.now();
  await run("mvn package (examples/java-spring)", "mvn", ["-B", "-q", "package"], {
    cwd: SPRING_EXAMPLE,
    log: installLog(l, "java-spring"),
  });
  writeFileSync(stamp, digest);
  progress(`built examples/java-spring in ${((Date.now() - t0) / 1000).toFixed(1)}s`);
  return jar;
}

/**
 * Builds examples/go (franz-go, from the Go module proxy) into the stack folder unless it was built
 * from the same sources; returns the binary.
 */
export async function buildGoExample(l: StackLayout, progress: Progress): Promise<string> {
  const binary = join(l.dir, "bin/idd-go-client");
  const stamp = `${binary}.sha256`;
  const sources = ["go.mod", "go.sum", "main.go"].map((f) => join(GO_EXAMPLE, f));
  const { digest, fresh } = builtFrom(GO_EXAMPLE, sources, binary, stamp);
  if (fresh) return binary;
  if (!which("go")) throw new IddError("STACK_TOOL_MISSING", "go not found on PATH: it builds examples/go");
  progress("building examples/go with go (first run and after changes only)");
  const t0 = Date.now();
  await run("go build (examples/go)", "go", ["build", "-o", binary, "."], { cwd: GO_EXAMPLE, log: installLog(l, "go-example") });
  writeFileSync(stamp, digest);
  progress(`built examples/go in ${((Date.now() - t0) / 1000).toFixed(1)}s`);
  return binary;
}

/** The venv for examples/python under the stack folder, with its requirements installed; returns its python. */
export async function pythonExampleVenv(l: StackLayout, progress: Progress): Promise<string> {
  const venv = join(l.dir, "venv");
  const python = join(venv, "bin/python");
  const stamp = join(venv, "idd-requirements.txt");
  const requirements = readFileSync(join(PYTHON_EXAMPLE, "requirements.txt"), "utf8");
  if (existsSync(python) && existsSync(stamp) && readFileSync(stamp, "utf8") === requirements) return python;
  const log = installLog(l, "python-venv");
  const python3 = await ensureDebianPackage(l, "python3", "python3", progress);
  if (!existsSync(python)) {
    // Debian's python3 makes venvs only with python3-venv (ensurepip) installed.
    if (spawnSync(python3, ["-c", "import ensurepip, venv"]).status !== 0)
      await aptGetInstall(l, "python3-venv", `${python3} cannot make a venv (no ensurepip)`, progress);
    progress(`creating the Python venv ${venv}`);
    await run("python3 -m venv", python3, ["-m", "venv", venv], { log });
  }
  progress(`installing ${requirements.trim().split("\n").join(", ")} into ${venv} with pip (first run only)`);
  const t0 = Date.now();
  await run("pip install (examples/python)", python, ["-m", "pip", "install", "-q", "-r", join(PYTHON_EXAMPLE, "requirements.txt")], {
    log,
  });
  writeFileSync(stamp, requirements);
  progress(`Python venv ready in ${((Date.now() - t0) / 1000).toFixed(1)}s`);
  return python;
}
