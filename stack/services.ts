/** How each stack service is started and how we know it is ready. */
import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { connect } from "node:net";
import { join } from "node:path";
import { Kafka, logLevel } from "kafkajs";
import { MongoClient } from "mongodb";
import { apicurioJar, ferretBin, javaBin, kafkaHome, which } from "./install.js";
import { dataDir, type ServiceName, type StackLayout } from "./paths.js";

export interface Launch {
  cmd: string;
  args: string[];
  cwd: string;
  env?: NodeJS.ProcessEnv;
}

export interface ServiceSpec {
  /** Ports this service listens on (all checked before starting). */
  ports(l: StackLayout): number[];
  /** Prepares data folders (once) and returns the command to run. */
  prepare(l: StackLayout): Promise<Launch>;
  /** Resolves true once the service answers a real request. */
  ready(l: StackLayout): Promise<boolean>;
}

export interface StackEnv {
  KAFKA_BROKERS: string;
  REDIS_URL: string;
  MONGODB_URL: string;
  SCHEMA_REGISTRY_URL: string;
}

export function stackEnv(l: StackLayout): StackEnv {
  return {
    KAFKA_BROKERS: `127.0.0.1:${l.ports.kafka}`,
    REDIS_URL: `redis://127.0.0.1:${l.ports.redis}`,
    MONGODB_URL: `mongodb://127.0.0.1:${l.ports.mongodb}/idd`,
    SCHEMA_REGISTRY_URL: `http://127.0.0.1:${l.ports.registry}/apis/ccompat/v7`,
  };
}

function javaOrThrow(): string {
  const java = javaBin();
  if (!java) throw new Error("java not found");
  return java;
}

const redis: ServiceSpec = {
  ports: (l) => [l.ports.redis],
  async prepare(l) {
    const dir = dataDir(l, "redis");
    mkdirSync(dir, { recursive: true });
    return {
      cmd: which("redis-server") ?? "redis-server",
      cwd: dir,
      // No persistence: the stack's Redis is a cache that replay rebuilds, as in production.
      args: [
        "--bind",
        "127.0.0.1",
        "--port",
        String(l.ports.redis),
        "--dir",
        dir,
        "--save",
        "",
        "--appendonly",
        "no",
        "--protected-mode",
        "yes",
      ],
    };
  },
  ready: (l) =>
    new Promise((resolve) => {
      const socket = connect({ host: "127.0.0.1", port: l.ports.redis });
      let got = "";
      const done = (ok: boolean) => {
        socket.destroy();
        resolve(ok);
      };
      socket.setTimeout(1000, () => done(false));
      socket.once("error", () => done(false));
      socket.once("connect", () => socket.write("PING\r\n"));
      socket.on("data", (d) => {
        got += d.toString("latin1");
        if (got.includes("\r\n")) done(got.startsWith("+PONG"));
      });
    }),
};

/** Kafka cluster ids are 16 random bytes in URL-safe base64; Kafka refuses ids starting with "-". */
function kafkaClusterId(): string {
  for (;;) {
    const id = randomBytes(16).toString("base64url");
    if (!id.startsWith("-")) return id;
  }
}

const kafka: ServiceSpec = {
  ports: (l) => [l.ports.kafka, l.ports.kafkaController],
  async prepare(l) {
    const dir = dataDir(l, "kafka");
    const conf = join(l.dir, "conf");
    mkdirSync(conf, { recursive: true });
    const props = join(conf, "kafka.properties");
    const { kafka: port, kafkaController: ctl } = l.ports;
    writeFileSync(
      props,
      [
        "process.roles=broker,controller",
        "node.id=1",
        `controller.quorum.voters=1@127.0.0.1:${ctl}`,
        `listeners=PLAINTEXT://127.0.0.1:${port},CONTROLLER://127.0.0.1:${ctl}`,
        `advertised.listeners=PLAINTEXT://127.0.0.1:${port}`,
        "controller.listener.names=CONTROLLER",
        "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        "inter.broker.listener.name=PLAINTEXT",
        `log.dirs=${dir}`,
        "num.partitions=1",
        "offsets.topic.replication.factor=1",
        "offsets.topic.num.partitions=8",
        "transaction.state.log.replication.factor=1",
        "transaction.state.log.min.isr=1",
        "group.initial.rebalance.delay.ms=0",
        // idd creates its topics explicitly; a typo must not create a topic silently.
        "auto.create.topics.enable=false",
        "",
      ].join("\n"),
    );
    const log4j = join(conf, "kafka-log4j.properties");
    writeFileSync(
      log4j,
      [
        "log4j.rootLogger=INFO, stdout",
        "log4j.logger.kafka.request.logger=WARN",
        "log4j.logger.org.apache.kafka.controller=WARN",
        "log4j.logger.kafka.log.LogCleaner=WARN",
        "log4j.appender.stdout=org.apache.log4j.ConsoleAppender",
        "log4j.appender.stdout.layout=org.apache.log4j.PatternLayout",
        "log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n",
        "",
      ].join("\n"),
    );
    const java = javaOrThrow();
    const cp = join(kafkaHome(l), "libs", "*");
    const jvm = [`-Dlog4j.configuration=file:${log4j}`, "-cp", cp];
    if (!existsSync(join(dir, "meta.properties"))) {
      mkdirSync(dir, { recursive: true });
      const r = spawnSync(java, [...jvm, "kafka.tools.StorageTool", "format", "-t", kafkaClusterId(), "-c", props], { encoding: "utf8" });
      if (r.status !== 0) throw new Error(`kafka storage format failed: ${(r.stderr || r.stdout).trim().split("\n").pop()}`);
    }
    return {
      cmd: java,
      cwd: dir,
      args: ["-Xms256m", "-Xmx512m", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20", "-Djava.awt.headless=true", ...jvm, "kafka.Kafka", props],
    };
  },
  async ready(l) {
    const admin = new Kafka({
      clientId: "idd-stack-probe",
      brokers: [`127.0.0.1:${l.ports.kafka}`],
      logLevel: logLevel.NOTHING,
      connectionTimeout: 1000,
      retry: { retries: 0 },
    }).admin();
    try {
      await admin.connect();
      const cluster = await admin.describeCluster();
      return cluster.brokers.length > 0 && cluster.controller !== null;
    } catch {
      return false;
    } finally {
      await admin.disconnect().catch(() => {});
    }
  },
};

const mongodb: ServiceSpec = {
  ports: (l) => [l.ports.mongodb],
  async prepare(l) {
    const dir = dataDir(l, "mongodb");
    mkdirSync(dir, { recursive: true });
    return {
      cmd: ferretBin(l),
      cwd: dir,
      args: [
        "--handler=sqlite",
        `--sqlite-url=file:${dir}/`,
        `--state-dir=${dir}`,
        `--listen-addr=127.0.0.1:${l.ports.mongodb}`,
        "--debug-addr=-",
        "--telemetry=disable",
        "--log-level=warn",
      ],
    };
  },
  async ready(l) {
    const client = new MongoClient(`mongodb://127.0.0.1:${l.ports.mongodb}/`, { serverSelectionTimeoutMS: 1000, connectTimeoutMS: 1000 });
    try {
      await client.db("admin").command({ ping: 1 });
      return true;
    } catch {
      return false;
    } finally {
      await client.close().catch(() => {});
    }
  },
};

const registry: ServiceSpec = {
  ports: (l) => [l.ports.registry],
  async prepare(l) {
    const dir = dataDir(l, "registry");
    mkdirSync(dir, { recursive: true });
    return {
      cmd: javaOrThrow(),
      cwd: dir,
      // In-memory storage (H2, Apicurio's default): schemas are registered again by idd at start-up.
      args: [
        "-Xmx384m",
        "-XX:+UseSerialGC",
        "-XX:TieredStopAtLevel=1",
        "-Djava.awt.headless=true",
        `-Dquarkus.http.port=${l.ports.registry}`,
        "-Dquarkus.http.host=127.0.0.1",
        "-Dquarkus.management.enabled=false",
        "-jar",
        apicurioJar(l),
      ],
    };
  },
  async ready(l) {
    try {
      const res = await fetch(`${stackEnv(l).SCHEMA_REGISTRY_URL}/subjects`, { signal: AbortSignal.timeout(1000) });
      return res.ok;
    } catch {
      return false;
    }
  },
};

export const SERVICES: Record<ServiceName, ServiceSpec> = { redis, kafka, mongodb, registry };
