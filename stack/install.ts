/**
 * Installs the stack's services once per machine into the cache directory, from the package
 * registries this project may use: Debian (redis-server), Maven Central (Kafka's jars, Apicurio
 * Registry), the Go module proxy (FerretDB). Each install lands in a temporary folder first and is
 * renamed into place when complete, so an interrupted install is redone, never half-used.
 */
import { spawn, spawnSync } from "node:child_process";
import {
  accessSync,
  closeSync,
  constants,
  existsSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { delimiter, dirname, join } from "node:path";
import { IddError } from "../src/core/errors.js";
import { type ServiceName, type StackLayout, VERSIONS } from "./paths.js";
import { withFileLock } from "./proc.js";

export type Progress = (line: string) => void;

export function which(cmd: string, env: NodeJS.ProcessEnv = process.env): string | undefined {
  for (const dir of (env.PATH ?? "").split(delimiter)) {
    if (!dir) continue;
    const p = join(dir, cmd);
    try {
      accessSync(p, constants.X_OK);
      return p;
    } catch {
      /* not here */
    }
  }
  return undefined;
}

export function javaBin(env: NodeJS.ProcessEnv = process.env): string | undefined {
  if (env.JAVA_HOME) {
    const p = join(env.JAVA_HOME, "bin", "java");
    if (existsSync(p)) return p;
  }
  return which("java", env);
}

function javaMajor(java: string): number | undefined {
  const out = spawnSync(java, ["-version"], { encoding: "utf8" });
  const m = /version "(\d+)(?:\.(\d+))?/.exec(`${out.stderr}${out.stdout}`);
  if (!m) return undefined;
  return m[1] === "1" ? Number(m[2]) : Number(m[1]);
}

export const kafkaHome = (l: StackLayout) => join(l.cacheDir, `kafka-${l.kafkaVersion}`);
/** Kafka 4 logs through log4j2 (log4j 1 and reload4j are gone from it); 3.x through reload4j. */
export const kafkaLogsWithLog4j2 = (l: StackLayout) => Number(l.kafkaVersion.split(".")[0]) >= 4;
export const ferretBin = (l: StackLayout) => join(l.cacheDir, FERRET_BUILD, "ferretdb");

/** FerretDB's version and the patch below: a binary built before the patch is built again. */
const FERRET_BUILD = `ferretdb-${VERSIONS.ferretdb}-field-index`;

/**
 * FerretDB 1.24.2's SQLite backend creates each collection's `_id` index on
 * `_ferretdb_sjson->"_id"` but looks documents up by `_ferretdb_sjson->'$._id'`: the same value,
 * another expression, so SQLite never uses the index and every find, update or delete by `_id`
 * scans the whole collection (24 ms a lookup with 20,000 sequences; it grows with the collection).
 * The lookup is patched to the index's expression (`->'_id'` is how SQLite reads `->"_id"`), so the
 * indexes of databases made before the patch serve it too. test/stack/ferretdb-index.test.ts checks
 * the plan.
 */
const FERRET_ID_LOOKUP = {
  file: "vendor/github.com/FerretDB/FerretDB/internal/backends/sqlite/metadata/metadata.go",
  from: `IDColumn = DefaultColumn + "->'$._id'"`,
  to: `IDColumn = DefaultColumn + "->'_id'"`,
};

/**
 * FerretDB 1.24.2's SQLite backend hands SQLite a filter only when it is `{_id: <string>}`; every
 * other query reads the whole collection and filters in Go, whatever indexes exist. So the read of
 * a counter's reservation in force (`{sequence, period}`, on every raise and every new counter) and
 * the gapless sweep (`{state: "pending", …}`) cost time in proportion to all history. The patch
 * hands SQLite every top-level equality on a string (`_ferretdb_sjson->'field' = ?`, the expression
 * FerretDB's indexes are made on), so an index on those fields serves the query. It only narrows
 * what is read: FerretDB's handlers filter every document read with the whole filter again, as
 * they do after the `_id` lookup. Its one difference from MongoDB: such an equality no longer
 * matches an array holding the string; no field idd queries holds an array.
 */
const FERRET_COLLECTION = "vendor/github.com/FerretDB/FerretDB/internal/backends/sqlite/collection.go";
const FERRET_FILTER_LOOKUPS = [
  {
    // Query
    from: `	if params.Filter.Len() == 1 {
		v, _ := params.Filter.Get("_id")
		switch v.(type) {
		case string, types.ObjectID:
			whereClause = fmt.Sprintf(\` WHERE %s = ?\`, metadata.IDColumn)
			args = []any{string(must.NotFail(sjson.MarshalSingleValue(v)))}
		}
	}
`,
    to: "	whereClause, args = iddWhere(params.Filter)\n",
  },
  {
    // Explain, which says what SQLite was handed
    from: `	if params.Filter.Len() == 1 {
		v, _ := params.Filter.Get("_id")
		switch v.(type) {
		case string, types.ObjectID:
			filterPushdown = true
			whereClause = fmt.Sprintf(\` WHERE %s = ?\`, metadata.IDColumn)
			args = []any{string(must.NotFail(sjson.MarshalSingleValue(v)))}
		}
	}
`,
    to: '	whereClause, args = iddWhere(params.Filter)\n	filterPushdown = whereClause != ""\n',
  },
];
/** The WHERE clause both use, in a file of its own in FerretDB's sqlite package. */
const FERRET_WHERE = `package sqlite

import (
	"regexp"
	"strings"

	"github.com/FerretDB/FerretDB/internal/backends/sqlite/metadata"
	"github.com/FerretDB/FerretDB/internal/handler/sjson"
	"github.com/FerretDB/FerretDB/internal/types"
	"github.com/FerretDB/FerretDB/internal/util/must"
)

var iddPlainField = regexp.MustCompile(\`^[A-Za-z_][A-Za-z0-9_]*$\`)

// iddWhere hands SQLite the top-level equalities on strings (and an ObjectID _id) of filter; the
// handlers filter every document read again, so this only narrows what is read (added by idd).
func iddWhere(filter *types.Document) (string, []any) {
	if filter == nil || filter.Len() == 0 {
		return "", nil
	}
	var conds []string
	var args []any
	for _, k := range filter.Keys() {
		if !iddPlainField.MatchString(k) {
			continue
		}
		v := must.NotFail(filter.Get(k))
		switch v.(type) {
		case string:
		case types.ObjectID:
			if k != "_id" {
				continue
			}
		default:
			continue
		}
		if k == "_id" {
			conds = append(conds, metadata.IDColumn+" = ?")
		} else {
			conds = append(conds, metadata.DefaultColumn+"->'"+k+"' = ?")
		}
		args = append(args, string(must.NotFail(sjson.MarshalSingleValue(v))))
	}
	if len(conds) == 0 {
		return "", nil
	}
	return " WHERE " + strings.Join(conds, " AND "), args
}
`;
export const apicurioHome = (l: StackLayout) => join(l.cacheDir, `apicurio-registry-${VERSIONS.apicurio}`);
export const apicurioJar = (l: StackLayout) => join(apicurioHome(l), `apicurio-registry-app-${VERSIONS.apicurio}-runner.jar`);

/** Services whose secured side serves the stack's certificates (stack/tls.ts), made with openssl. */
const needsTls = (services: readonly ServiceName[]) => services.some((s) => s === "kafka" || s === "registry" || s === "mongodb-auth");
const isKafka = (s: ServiceName) => s === "kafka" || s.startsWith("kafka-");
const isRedis = (s: ServiceName) => s.startsWith("redis") || s.startsWith("sentinel-");

/**
 * Everything missing for the chosen services, one line per problem, checked before anything is
 * installed or started. Tools only needed to install something already cached are not required.
 */
export function preflight(l: StackLayout, services: readonly ServiceName[], env: NodeJS.ProcessEnv = process.env): string[] {
  const problems: string[] = [];
  const needs = new Set(services);
  const kafka = services.some(isKafka);
  if (kafka || needs.has("registry")) {
    const java = javaBin(env);
    if (!java) {
      problems.push("java not found (set JAVA_HOME or put java on PATH): Kafka and the schema registry need a JDK 17 or newer");
    } else {
      const major = javaMajor(java);
      if (major === undefined || major < 17)
        problems.push(`${java} is Java ${major ?? "?"}; Kafka and the schema registry need Java 17 or newer`);
    }
    const needMaven = (kafka && !existsSync(kafkaHome(l))) || (needs.has("registry") && !existsSync(apicurioHome(l)));
    if (needMaven && !which("mvn", env)) {
      problems.push("mvn (Apache Maven) not found on PATH: it fetches Kafka and Apicurio Registry from Maven Central on the first run");
    }
  }
  if (needsTls(services) && !which("openssl", env) && !(which("apt-get", env) && process.getuid?.() === 0)) {
    problems.push(
      "openssl not found on PATH, and apt-get cannot install it here (needs root): install Debian's openssl (it makes the certificates of the stack's TLS endpoints)",
    );
  }
  if ((needs.has("mongodb") || needs.has("mongodb-auth")) && !existsSync(ferretBin(l)) && !which("go", env)) {
    problems.push(`go not found on PATH: it builds FerretDB ${VERSIONS.ferretdb} (the MongoDB-protocol server) on the first run`);
  }
  if (services.some(isRedis) && !which("redis-server", env) && !(which("apt-get", env) && process.getuid?.() === 0)) {
    problems.push("redis-server not found on PATH, and apt-get cannot install it here (needs root): install Debian's redis-server");
  }
  return problems;
}

/** Runs a command, its output appended to `log`; rejects with STACK_INSTALL_FAILED naming the log. */
export function run(
  what: string,
  cmd: string,
  args: string[],
  opts: { cwd?: string; log: string; env?: NodeJS.ProcessEnv },
): Promise<void> {
  const fd = openSync(opts.log, "a");
  return new Promise<void>((resolve, reject) => {
    const child = spawn(cmd, args, { cwd: opts.cwd, env: opts.env ?? process.env, stdio: ["ignore", fd, fd] });
    child.once("error", (e) => reject(new IddError("STACK_INSTALL_FAILED", `${what}: ${e.message}`, { cause: e })));
    child.once("exit", (code, sig) =>
      code === 0 ? resolve() : reject(new IddError("STACK_INSTALL_FAILED", `${what} failed (exit ${code ?? sig}); see ${opts.log}`)),
    );
  }).finally(() => closeSync(fd));
}

/**
 * Builds `target` in a fresh temporary folder and renames it into place when `build` succeeds.
 * Checkouts share the cache: one process builds a target at a time (`<target>.lock`), and one
 * that waited finds it built; callers in one process share its build.
 */
export function installDir(target: string, build: (tmp: string) => Promise<void>): Promise<void> {
  if (existsSync(target)) return Promise.resolve();
  let building = buildsInProcess.get(target);
  if (!building) {
    building = buildLocked(target, build).finally(() => buildsInProcess.delete(target));
    buildsInProcess.set(target, building);
  }
  return building;
}

const buildsInProcess = new Map<string, Promise<void>>();

function buildLocked(target: string, build: (tmp: string) => Promise<void>): Promise<void> {
  return withFileLock(`${target}.lock`, async () => {
    if (existsSync(target)) return;
    const tmp = `${target}.tmp-${process.pid}`;
    rmSync(tmp, { recursive: true, force: true });
    mkdirSync(tmp, { recursive: true });
    try {
      await build(tmp);
      renameSync(tmp, target);
    } catch (e) {
      rmSync(tmp, { recursive: true, force: true });
      throw e;
    }
  });
}

export const installLog = (l: StackLayout, name: string) => {
  mkdirSync(join(l.cacheDir, "logs"), { recursive: true });
  return join(l.cacheDir, "logs", `install-${name}.log`);
};

/** Installs a Debian package with apt-get when `bin` is not on PATH (first run only); returns the binary's path. */
export async function ensureDebianPackage(l: StackLayout, pkg: string, bin: string, progress: Progress): Promise<string> {
  const found = which(bin);
  if (found) return found;
  const log = await aptGetInstall(l, pkg, `${bin} not found on PATH`, progress);
  const installed = which(bin);
  if (!installed) throw new IddError("STACK_INSTALL_FAILED", `${bin} still not on PATH after installing ${pkg}; see ${log}`);
  return installed;
}

/** `apt-get install pkg` (as root only; `missing` says what is missing otherwise); returns the log's path. */
export async function aptGetInstall(l: StackLayout, pkg: string, missing: string, progress: Progress): Promise<string> {
  if (!which("apt-get") || process.getuid?.() !== 0) {
    throw new IddError("STACK_TOOL_MISSING", `${missing}, and apt-get cannot install it here (needs root): install Debian's ${pkg}`);
  }
  progress(`installing Debian's ${pkg} (apt-get, first run only)`);
  const log = installLog(l, pkg);
  const env = { ...process.env, DEBIAN_FRONTEND: "noninteractive" };
  await run("apt-get update", "apt-get", ["update", "-q"], { log, env });
  await run(`apt-get install ${pkg}`, "apt-get", ["install", "-y", "-q", "--no-install-recommends", pkg], { log, env });
  return log;
}

/**
 * Debian's headless-capable Chromium, for the status page's browser test (test/ops/status.test.ts):
 * not a service, so `up` does not start it; the test setup installs it like redis-server (first run
 * only, apt-get when it is missing). Returns the binary's path.
 */
export async function ensureChromium(l: StackLayout, progress: Progress): Promise<string> {
  mkdirSync(l.cacheDir, { recursive: true });
  return ensureDebianPackage(l, "chromium", "chromium", progress);
}

/**
 * Prometheus's `promtool`, for the alerting rules' unit tests (`promtool test rules`, test/ops/
 * alert-rules.test.ts): Debian's `prometheus` package carries it. Not a service, so `up` does not
 * start it; installed on first use like Chromium. Returns the binary's path.
 */
export async function ensurePromtool(l: StackLayout, progress: Progress): Promise<string> {
  mkdirSync(l.cacheDir, { recursive: true });
  return ensureDebianPackage(l, "prometheus", "promtool", progress);
}

async function installRedis(l: StackLayout, progress: Progress): Promise<void> {
  await ensureDebianPackage(l, "redis-server", "redis-server", progress);
}

async function installKafka(l: StackLayout, progress: Progress): Promise<void> {
  await installDir(kafkaHome(l), async (tmp) => {
    progress(`fetching Apache Kafka ${l.kafkaVersion} jars from Maven Central (first run only)`);
    const slf4jBinding = kafkaLogsWithLog4j2(l)
      ? `<groupId>org.apache.logging.log4j</groupId><artifactId>log4j-slf4j-impl</artifactId><version>2.25.5</version>`
      : `<groupId>org.slf4j</groupId><artifactId>slf4j-reload4j</artifactId><version>1.7.36</version>`;
    writeFileSync(
      join(tmp, "pom.xml"),
      `<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>idd.stack</groupId><artifactId>kafka-broker</artifactId><version>1</version><packaging>pom</packaging>
  <dependencies>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka_2.13</artifactId><version>${l.kafkaVersion}</version></dependency>
    <dependency>${slf4jBinding}</dependency>
  </dependencies>
</project>
`,
    );
    await run(
      "mvn dependency:copy-dependencies (Kafka)",
      "mvn",
      ["-B", "-q", "dependency:copy-dependencies", "-DoutputDirectory=libs", "-DincludeScope=runtime"],
      {
        cwd: tmp,
        log: installLog(l, "kafka"),
      },
    );
  });
}

async function installFerret(l: StackLayout, progress: Progress): Promise<void> {
  await installDir(join(l.cacheDir, FERRET_BUILD), async (tmp) => {
    progress(`building FerretDB ${VERSIONS.ferretdb} with go (first run only, about 2 minutes)`);
    // A throw-away module pinning FerretDB, vendored so that the version file FerretDB embeds (made
    // by its own release tooling, absent from the module) can be added. `go install …@version` is
    // avoided on purpose: it also asks the proxy for the version list, which a proxy may refuse.
    const src = join(tmp, "src");
    mkdirSync(src);
    writeFileSync(
      join(src, "go.mod"),
      `module idd.local/ferretdb\n\ngo 1.22\n\nrequire github.com/FerretDB/FerretDB v${VERSIONS.ferretdb}\n`,
    );
    writeFileSync(join(src, "tools.go"), `//go:build tools\n\npackage tools\n\nimport _ "github.com/FerretDB/FerretDB/cmd/ferretdb"\n`);
    const log = installLog(l, "ferretdb");
    const env = { ...process.env, CGO_ENABLED: "0", GOFLAGS: "" };
    await run("go mod tidy (FerretDB)", "go", ["mod", "tidy"], { cwd: src, log, env });
    await run("go mod vendor (FerretDB)", "go", ["mod", "vendor"], { cwd: src, log, env });
    writeFileSync(join(src, "vendor/github.com/FerretDB/FerretDB/build/version/version.txt"), `v${VERSIONS.ferretdb}\n`);
    const lookup = join(src, FERRET_ID_LOOKUP.file);
    const text = readFileSync(lookup, "utf8");
    if (!text.includes(FERRET_ID_LOOKUP.from))
      throw new IddError(
        "STACK_INSTALL_FAILED",
        `FerretDB ${VERSIONS.ferretdb}: ${FERRET_ID_LOOKUP.file} no longer says ${FERRET_ID_LOOKUP.from}`,
      );
    writeFileSync(lookup, text.replace(FERRET_ID_LOOKUP.from, FERRET_ID_LOOKUP.to));
    const collection = join(src, FERRET_COLLECTION);
    let code = readFileSync(collection, "utf8");
    for (const p of FERRET_FILTER_LOOKUPS) {
      if (!code.includes(p.from))
        throw new IddError(
          "STACK_INSTALL_FAILED",
          `FerretDB ${VERSIONS.ferretdb}: ${FERRET_COLLECTION} no longer has the _id pushdown idd patches`,
        );
      code = code.replace(p.from, p.to);
    }
    writeFileSync(collection, code);
    writeFileSync(join(dirname(collection), "idd_where.go"), FERRET_WHERE);
    const pkg = "github.com/FerretDB/FerretDB/cmd/ferretdb";
    await run("go build (FerretDB)", "go", ["build", "-mod=vendor", "-o", join(tmp, "ferretdb"), pkg], { cwd: src, log, env });
    rmSync(src, { recursive: true, force: true });
  });
}

async function installApicurio(l: StackLayout, progress: Progress): Promise<void> {
  await installDir(apicurioHome(l), async (tmp) => {
    progress(`fetching Apicurio Registry ${VERSIONS.apicurio} from Maven Central (first run only)`);
    const log = installLog(l, "registry");
    const artifact = `io.apicurio:apicurio-registry-app:${VERSIONS.apicurio}:tar.gz:all`;
    await run(
      "mvn dependency:copy (Apicurio Registry)",
      "mvn",
      ["-B", "-q", "dependency:copy", `-Dartifact=${artifact}`, `-DoutputDirectory=${tmp}`],
      { log },
    );
    const tarball = readdirSync(tmp).find((f) => f.endsWith(".tar.gz"));
    if (!tarball) throw new IddError("STACK_INSTALL_FAILED", `Apicurio Registry tarball missing after mvn; see ${log}`);
    await run("tar (Apicurio Registry)", "tar", ["xzf", tarball], { cwd: tmp, log });
    rmSync(join(tmp, tarball));
  });
}

export async function install(l: StackLayout, services: readonly ServiceName[], progress: Progress): Promise<void> {
  const step = (s: ServiceName): ((l: StackLayout, p: Progress) => Promise<void>) =>
    isKafka(s) ? installKafka : isRedis(s) ? installRedis : s === "registry" ? installApicurio : installFerret;
  mkdirSync(l.cacheDir, { recursive: true });
  // Before the others: two apt-get runs at once would fight over dpkg's lock (redis-server's runs below).
  if (needsTls(services)) await ensureDebianPackage(l, "openssl", "openssl", progress);
  await Promise.all([...new Set(services.map(step))].map((step) => step(l, progress)));
}
