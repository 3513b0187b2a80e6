/** How each stack service is started and how we know it is ready. */
import { spawnSync } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { connect } from "node:net";
import { join } from "node:path";
import { Kafka, logLevel } from "kafkajs";
import { MongoClient } from "mongodb";
import { apicurioJar, ferretBin, javaBin, kafkaHome, which } from "./install.js";
import { dataDir, type ServiceName, type StackLayout } from "./paths.js";
import { STACK_USER, stackSecrets } from "./secrets.js";
import { stackTls } from "./tls.js";

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
  /** Runs once the service is ready, each time it is started. */
  afterReady?(l: StackLayout): Promise<void>;
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
    // The registry wants basic auth (stack/secrets.ts): the URL carries it, as a user's may.
    SCHEMA_REGISTRY_URL: `http://${STACK_USER}:${stackSecrets(l).registryPassword}@127.0.0.1:${l.ports.registry}/apis/ccompat/v7`,
  };
}

function javaOrThrow(): string {
  const java = javaBin();
  if (!java) throw new Error("java not found");
  return java;
}

/** A redis-server on `port` (of the layout); with `password`, requirepass (the secured one). */
function redisServer(name: "redis" | "redis-auth", port: (l: StackLayout) => number, password?: (l: StackLayout) => string): ServiceSpec {
  return {
    ports: (l) => [port(l)],
    async prepare(l) {
      const dir = dataDir(l, name);
      mkdirSync(dir, { recursive: true });
      return {
        cmd: which("redis-server") ?? "redis-server",
        cwd: dir,
        // No persistence: the stack's Redis is a cache that replay rebuilds, as in production.
        args: [
          "--bind",
          "127.0.0.1",
          "--port",
          String(port(l)),
          "--dir",
          dir,
          "--save",
          "",
          "--appendonly",
          "no",
          "--protected-mode",
          "yes",
          ...(password ? ["--requirepass", password(l)] : []),
        ],
      };
    },
    ready: (l) =>
      new Promise((resolve) => {
        const socket = connect({ host: "127.0.0.1", port: port(l) });
        let got = "";
        const done = (ok: boolean) => {
          socket.destroy();
          resolve(ok);
        };
        socket.setTimeout(1000, () => done(false));
        socket.once("error", () => done(false));
        socket.once("connect", () => socket.write(`${password ? `AUTH ${password(l)}\r\n` : ""}PING\r\n`));
        socket.on("data", (d) => {
          got += d.toString("latin1");
          if (got.endsWith("\r\n") && got.split("\r\n").length > (password ? 2 : 1)) done(got.endsWith("+PONG\r\n"));
        });
      }),
  };
}

const redis = redisServer("redis", (l) => l.ports.redis);
const redisAuth = redisServer(
  "redis-auth",
  (l) => l.ports.redisAuth,
  (l) => stackSecrets(l).redisPassword,
);

/** Kafka cluster ids are 16 random bytes in URL-safe base64; Kafka refuses ids starting with "-". */
function kafkaClusterId(): string {
  for (;;) {
    const id = randomBytes(16).toString("base64url");
    if (!id.startsWith("-")) return id;
  }
}

/**
 * SCRAM credentials of the stack's user, as StorageTool's --add-scram and ConfigCommand's
 * --add-config take them (both mechanisms; SCRAM-SHA-256 with the iterations Kafka's own tools use).
 */
const scramCredentials = (password: string) => [
  `SCRAM-SHA-256=[name=${STACK_USER},iterations=8192,password=${password}]`,
  `SCRAM-SHA-512=[name=${STACK_USER},password=${password}]`,
];
/** Which password the broker's SCRAM credentials were made from (a digest, not the password). */
const scramMarker = (l: StackLayout) => join(dataDir(l, "kafka"), "idd-scram-user");
const scramDigest = (password: string) => createHash("sha256").update(`${STACK_USER}:${password}`).digest("hex");

function kafkaJvm(l: StackLayout): string[] {
  return [`-Dlog4j.configuration=file:${join(l.dir, "conf", "kafka-log4j.properties")}`, "-cp", join(kafkaHome(l), "libs", "*")];
}

const kafka: ServiceSpec = {
  ports: (l) => [l.ports.kafka, l.ports.kafkaController, l.ports.kafkaSasl],
  async prepare(l) {
    const dir = dataDir(l, "kafka");
    const conf = join(l.dir, "conf");
    mkdirSync(conf, { recursive: true });
    const props = join(conf, "kafka.properties");
    const { kafka: port, kafkaController: ctl, kafkaSasl: sasl } = l.ports;
    const { kafkaPassword } = stackSecrets(l);
    const tls = stackTls(l);
    // The SASL_SSL listener's PLAIN users live in its JAAS line; SCRAM users in the cluster metadata.
    const scramJaas = "org.apache.kafka.common.security.scram.ScramLoginModule required;";
    writeFileSync(
      props,
      [
        "process.roles=broker,controller",
        "node.id=1",
        `controller.quorum.voters=1@127.0.0.1:${ctl}`,
        `listeners=PLAINTEXT://127.0.0.1:${port},CONTROLLER://127.0.0.1:${ctl},SASL_SSL://127.0.0.1:${sasl}`,
        `advertised.listeners=PLAINTEXT://127.0.0.1:${port},SASL_SSL://127.0.0.1:${sasl}`,
        "controller.listener.names=CONTROLLER",
        "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,SASL_SSL:SASL_SSL",
        "inter.broker.listener.name=PLAINTEXT",
        "sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
        "listener.name.sasl_ssl.ssl.keystore.type=PEM",
        `listener.name.sasl_ssl.ssl.keystore.location=${tls.kafkaKeystoreFile}`,
        // Mutual TLS: a client must also present a certificate signed by the stack's CA.
        "listener.name.sasl_ssl.ssl.client.auth=required",
        "listener.name.sasl_ssl.ssl.truststore.type=PEM",
        `listener.name.sasl_ssl.ssl.truststore.location=${tls.caFile}`,
        `listener.name.sasl_ssl.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_${STACK_USER}="${kafkaPassword}";`,
        `listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config=${scramJaas}`,
        `listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=${scramJaas}`,
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
    const jvm = kafkaJvm(l);
    if (!existsSync(join(dir, "meta.properties"))) {
      mkdirSync(dir, { recursive: true });
      const scram = scramCredentials(kafkaPassword).flatMap((c) => ["--add-scram", c]);
      const r = spawnSync(java, [...jvm, "kafka.tools.StorageTool", "format", "-t", kafkaClusterId(), "-c", props, ...scram], {
        encoding: "utf8",
      });
      if (r.status !== 0) throw new Error(`kafka storage format failed: ${(r.stderr || r.stdout).trim().split("\n").pop()}`);
      writeFileSync(scramMarker(l), scramDigest(kafkaPassword));
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
  /** A broker formatted before the SCRAM user existed (or with another password) gets it now. */
  async afterReady(l) {
    const { kafkaPassword } = stackSecrets(l);
    const marker = scramMarker(l);
    if (existsSync(marker) && readFileSync(marker, "utf8") === scramDigest(kafkaPassword)) return;
    const args = ["--bootstrap-server", `127.0.0.1:${l.ports.kafka}`, "--alter", "--entity-type", "users", "--entity-name", STACK_USER];
    // One mechanism per call: Kafka refuses to alter one user's credentials twice in a request.
    for (const credential of scramCredentials(kafkaPassword)) {
      const config = credential.replace(`name=${STACK_USER},`, "");
      const r = spawnSync(javaOrThrow(), [...kafkaJvm(l), "kafka.admin.ConfigCommand", ...args, "--add-config", config], {
        encoding: "utf8",
      });
      if (r.status !== 0) throw new Error(`adding the SCRAM user failed: ${(r.stderr || r.stdout).trim().split("\n").pop()}`);
    }
    writeFileSync(marker, scramDigest(kafkaPassword));
  },
};

/**
 * A FerretDB on SQLite. The `mongodb-auth` one wants a login: FerretDB's new authentication, with
 * the user `idd` created in database `idd` at its first start (so URLs need `authSource=idd`).
 */
function ferretDb(name: "mongodb" | "mongodb-auth", port: (l: StackLayout) => number, password?: (l: StackLayout) => string): ServiceSpec {
  return {
    ports: (l) => [port(l)],
    async prepare(l) {
      const dir = dataDir(l, name);
      mkdirSync(dir, { recursive: true });
      // The login FerretDB also speaks only TLS, with the stack's server certificate.
      const listen = password
        ? [
            "--listen-addr=",
            `--listen-tls=127.0.0.1:${port(l)}`,
            `--listen-tls-cert-file=${stackTls(l).serverCertFile}`,
            `--listen-tls-key-file=${stackTls(l).serverKeyFile}`,
            "--test-enable-new-auth",
            "--setup-database=idd",
            `--setup-username=${STACK_USER}`,
            `--setup-password=${password(l)}`,
          ]
        : [`--listen-addr=127.0.0.1:${port(l)}`];
      return {
        cmd: ferretBin(l),
        cwd: dir,
        args: [
          "--handler=sqlite",
          `--sqlite-url=file:${dir}/`,
          `--state-dir=${dir}`,
          ...listen,
          "--debug-addr=-",
          "--telemetry=disable",
          "--log-level=warn",
        ],
      };
    },
    async ready(l) {
      const login = password ? `${STACK_USER}:${encodeURIComponent(password(l))}@` : "";
      const query = password ? `?authSource=idd&tls=true&tlsCAFile=${encodeURIComponent(stackTls(l).caFile)}` : "";
      const client = new MongoClient(`mongodb://${login}127.0.0.1:${port(l)}/${query}`, {
        serverSelectionTimeoutMS: 1000,
        connectTimeoutMS: 1000,
      });
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
}

const mongodb = ferretDb("mongodb", (l) => l.ports.mongodb);
const mongodbAuth = ferretDb(
  "mongodb-auth",
  (l) => l.ports.mongodbAuth,
  (l) => stackSecrets(l).mongodbPassword,
);

const registry: ServiceSpec = {
  ports: (l) => [l.ports.registry, l.ports.registryTls],
  async prepare(l) {
    const dir = dataDir(l, "registry");
    mkdirSync(dir, { recursive: true });
    const tls = stackTls(l);
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
        // And https on a port of its own, with the stack's server certificate (secured tests).
        `-Dquarkus.http.ssl-port=${l.ports.registryTls}`,
        `-Dquarkus.http.ssl.certificate.files=${tls.serverCertFile}`,
        `-Dquarkus.http.ssl.certificate.key-files=${tls.serverKeyFile}`,
        "-Dquarkus.http.insecure-requests=enabled",
        "-Dquarkus.management.enabled=false",
        // HTTP basic auth by Quarkus with one embedded user: Apicurio's own auth needs an OIDC server.
        "-Dquarkus.security.users.embedded.enabled=true",
        "-Dquarkus.security.users.embedded.plain-text=true",
        `-Dquarkus.security.users.embedded.users.${STACK_USER}=${stackSecrets(l).registryPassword}`,
        "-Dquarkus.http.auth.basic=true",
        "-Dquarkus.http.auth.permission.idd.paths=/apis/*",
        "-Dquarkus.http.auth.permission.idd.policy=authenticated",
        "-jar",
        apicurioJar(l),
      ],
    };
  },
  async ready(l) {
    try {
      const auth = Buffer.from(`${STACK_USER}:${stackSecrets(l).registryPassword}`).toString("base64");
      const res = await fetch(`http://127.0.0.1:${l.ports.registry}/apis/ccompat/v7/subjects`, {
        headers: { authorization: `Basic ${auth}` },
        signal: AbortSignal.timeout(1000),
      });
      return res.ok;
    } catch {
      return false;
    }
  },
};

export const SERVICES: Record<ServiceName, ServiceSpec> = {
  redis,
  "redis-auth": redisAuth,
  kafka,
  mongodb,
  "mongodb-auth": mongodbAuth,
  registry,
};
