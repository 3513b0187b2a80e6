/**
 * The stack's Kafka brokers, KRaft only: the default profile's single node (broker and controller,
 * with the secured SASL_SSL listener) and the cluster profile's three nodes (each broker and
 * controller, a 3-voter quorum). Either Kafka line the layout names (4.x by default, 3.9): the
 * differences are the logging configuration (log4j2 on 4.x, reload4j on 3.x) and nothing else.
 */
import { spawnSync } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { javaBin, kafkaHome, kafkaLogsWithLog4j2 } from "./install.js";
import { ServedAdmin } from "./kafka-admin.js";
import { dataDir, KAFKA_NODES, type ServiceName, type StackLayout } from "./paths.js";
import { STACK_USER, stackSecrets } from "./secrets.js";
import type { ServiceSpec } from "./service-spec.js";
import { stackTls } from "./tls.js";

function javaOrThrow(): string {
  const java = javaBin();
  if (!java) throw new Error("java not found");
  return java;
}

/** Kafka cluster ids are 16 random bytes in URL-safe base64; Kafka refuses ids starting with "-". */
function kafkaClusterId(): string {
  for (;;) {
    const id = randomBytes(16).toString("base64url");
    if (!id.startsWith("-")) return id;
  }
}

/**
 * SCRAM credentials of the stack's user, as StorageTool's --add-scram takes them (both mechanisms;
 * SCRAM-SHA-256 with the iterations Kafka's own tools use). They are written into the metadata when
 * the node is formatted, the one way that works on 3.9 and 4.x alike without the tools jar
 * (kafka.admin.ConfigCommand is gone from 4.x's core jar).
 */
const scramCredentials = (password: string) => [
  `SCRAM-SHA-256=[name=${STACK_USER},iterations=8192,password=${password}]`,
  `SCRAM-SHA-512=[name=${STACK_USER},password=${password}]`,
];

function writeLogConfig(l: StackLayout): string[] {
  const conf = join(l.dir, "conf");
  mkdirSync(conf, { recursive: true });
  const quiet = ["kafka.request.logger", "org.apache.kafka.controller", "kafka.log.LogCleaner"];
  if (kafkaLogsWithLog4j2(l)) {
    const file = join(conf, "kafka-log4j2.properties");
    writeFileSync(
      file,
      [
        "status=warn",
        "appender.stdout.type=Console",
        "appender.stdout.name=STDOUT",
        "appender.stdout.layout.type=PatternLayout",
        "appender.stdout.layout.pattern=[%d] %p %m (%c)%n",
        "rootLogger.level=INFO",
        "rootLogger.appenderRef.stdout.ref=STDOUT",
        ...quiet.flatMap((name, i) => [`logger.q${i}.name=${name}`, `logger.q${i}.level=WARN`]),
        "",
      ].join("\n"),
    );
    return [`-Dlog4j2.configurationFile=${file}`];
  }
  const file = join(conf, "kafka-log4j.properties");
  writeFileSync(
    file,
    [
      "log4j.rootLogger=INFO, stdout",
      ...quiet.map((name) => `log4j.logger.${name}=WARN`),
      "log4j.appender.stdout=org.apache.log4j.ConsoleAppender",
      "log4j.appender.stdout.layout=org.apache.log4j.PatternLayout",
      "log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n",
      "",
    ].join("\n"),
  );
  return [`-Dlog4j.configuration=file:${file}`];
}

/**
 * What a node's data folder was formatted for: the Kafka version and the SCRAM credentials (a digest). A folder
 * formatted for anything else (another line, a new password, an older stack) is formatted anew:
 * 4.x metadata does not go back to 3.9, and the stack's topics are test data.
 */
const formatMarker = (dir: string) => join(dir, "idd-format.json");

function format(l: StackLayout, dir: string, props: string, jvm: string[], clusterId: string, scram: string[]): void {
  const want = JSON.stringify({ kafka: l.kafkaVersion, scram: createHash("sha256").update(scram.join("\n")).digest("hex") });
  if (existsSync(join(dir, "meta.properties")) && existsSync(formatMarker(dir)) && readFileSync(formatMarker(dir), "utf8") === want) return;
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const add = scram.flatMap((c) => ["--add-scram", c]);
  const r = spawnSync(javaOrThrow(), [...jvm, "kafka.tools.StorageTool", "format", "-t", clusterId, "-c", props, ...add], {
    encoding: "utf8",
  });
  if (r.status !== 0) throw new Error(`kafka storage format failed: ${(r.stderr || r.stdout).trim().split("\n").pop()}`);
  writeFileSync(formatMarker(dir), want);
}

/** Properties every node of the stack shares. */
const common = (dir: string, copies: number) => [
  "process.roles=broker,controller",
  "controller.listener.names=CONTROLLER",
  "inter.broker.listener.name=PLAINTEXT",
  `log.dirs=${dir}`,
  "num.partitions=1",
  // As production clusters set it: a topic created without a replication factor (a client's reply
  // topic, a test's) keeps a leader when one broker dies. With 1 copy, its partitions on a dead
  // broker have none, and kafkajs then fails every request for all topics' metadata, which every
  // kafkajs client's connect makes (a worker started then could not start).
  `default.replication.factor=${copies}`,
  `offsets.topic.replication.factor=${copies}`,
  "offsets.topic.num.partitions=8",
  `transaction.state.log.replication.factor=${copies}`,
  `transaction.state.log.min.isr=${Math.min(copies, 2)}`,
  "group.initial.rebalance.delay.ms=0",
  // idd creates its topics explicitly; a typo must not create a topic silently.
  "auto.create.topics.enable=false",
];

function launch(dir: string, props: string, jvm: string[], heap: string[]) {
  return {
    cmd: javaOrThrow(),
    cwd: dir,
    args: [...heap, "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20", "-Djava.awt.headless=true", ...jvm, "kafka.Kafka", props],
  };
}

const jvmFor = (l: StackLayout) => [...writeLogConfig(l), "-cp", join(kafkaHome(l), "libs", "*")];

/** The default profile's single node, with the PLAINTEXT listener the suite uses and the secured SASL_SSL one. */
export const kafka: ServiceSpec = {
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
        "node.id=1",
        `controller.quorum.voters=1@127.0.0.1:${ctl}`,
        `listeners=PLAINTEXT://127.0.0.1:${port},CONTROLLER://127.0.0.1:${ctl},SASL_SSL://127.0.0.1:${sasl}`,
        `advertised.listeners=PLAINTEXT://127.0.0.1:${port},SASL_SSL://127.0.0.1:${sasl}`,
        "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,SASL_SSL:SASL_SSL",
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
        ...common(dir, 1),
        "",
      ].join("\n"),
    );
    const jvm = jvmFor(l);
    format(l, dir, props, jvm, kafkaClusterId(), scramCredentials(kafkaPassword));
    return launch(dir, props, jvm, ["-Xms256m", "-Xmx512m"]);
  },
  ready: async (l) => (await ServedAdmin.brokerIds(`127.0.0.1:${l.ports.kafka}`)) !== undefined,
};

/** The cluster profile's node `id` (1–3): PLAINTEXT only, formatted with the cluster's one id. */
function kafkaNode(id: number): ServiceSpec {
  const name = `kafka-${id}` as ServiceName;
  const i = id - 1;
  return {
    ports: (l) => [l.ports.kafkaNodes[i] as number, l.ports.kafkaNodeControllers[i] as number],
    async prepare(l) {
      const dir = dataDir(l, name);
      const conf = join(l.dir, "conf");
      mkdirSync(conf, { recursive: true });
      const props = join(conf, `${name}.properties`);
      const voters = l.ports.kafkaNodeControllers.map((p, n) => `${n + 1}@127.0.0.1:${p}`).join(",");
      const port = l.ports.kafkaNodes[i];
      const ctl = l.ports.kafkaNodeControllers[i];
      writeFileSync(
        props,
        [
          `node.id=${id}`,
          `controller.quorum.voters=${voters}`,
          `listeners=PLAINTEXT://127.0.0.1:${port},CONTROLLER://127.0.0.1:${ctl}`,
          `advertised.listeners=PLAINTEXT://127.0.0.1:${port}`,
          "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
          // A killed node is fenced (its partitions led elsewhere) after 3 s instead of 9.
          "broker.heartbeat.interval.ms=500",
          "broker.session.timeout.ms=3000",
          ...common(dir, 3),
          "",
        ].join("\n"),
      );
      // One cluster id for the three nodes, kept beside their configurations.
      const idFile = join(conf, "kafka-cluster.id");
      if (!existsSync(idFile)) writeFileSync(idFile, kafkaClusterId());
      const jvm = jvmFor(l);
      format(l, dir, props, jvm, readFileSync(idFile, "utf8").trim(), []);
      return launch(dir, props, jvm, ["-Xms128m", "-Xmx384m"]);
    },
    ready: async (l) => (await ServedAdmin.brokerIds(`127.0.0.1:${l.ports.kafkaNodes[i]}`)) !== undefined,
  };
}

export const KAFKA_NODE_SPECS = Object.fromEntries(KAFKA_NODES.map((n, i) => [n, kafkaNode(i + 1)])) as Record<
  (typeof KAFKA_NODES)[number],
  ServiceSpec
>;

/** The cluster's bootstrap list, all three nodes. */
export const kafkaClusterBrokers = (l: StackLayout) => l.ports.kafkaNodes.map((p) => `127.0.0.1:${p}`);

/**
 * Settles once every node's metadata lists all nodes and a controller (topics with 3 copies can be
 * created from then on, and whichever node a client asks first knows its peers): each node is
 * asked, since a node that has just joined learns of the others a moment after they learn of it.
 */
export async function kafkaClusterSettled(l: StackLayout): Promise<boolean> {
  const views = await Promise.all(kafkaClusterBrokers(l).map((b) => ServedAdmin.brokerIds(b)));
  return views.every((ids) => ids?.length === KAFKA_NODES.length);
}
