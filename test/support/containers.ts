/**
 * The same four services in containers, for machines with a Docker engine (not this project's CI
 * machine, which has none). Kafka is advertised on a fixed host port so clients outside the
 * container can reach it.
 */
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { GenericContainer, type StartedTestContainer, Wait } from "testcontainers";
import type { ServiceSettings } from "../../src/config/services.js";
import { IMAGES } from "../../stack/paths.js";

export async function dockerEngineReachable(): Promise<boolean> {
  try {
    await promisify(execFile)("docker", ["info", "--format", "{{.ServerVersion}}"], { timeout: 5000 });
    return true;
  } catch {
    return false;
  }
}

export async function startContainers(): Promise<{ settings: ServiceSettings; stop: () => Promise<void> }> {
  const kafkaPort = 39092;
  const started: StartedTestContainer[] = [];
  const start = async (c: GenericContainer) => {
    const s = await c.start();
    started.push(s);
    return s;
  };
  try {
    const [redis, mongo, , registry] = await Promise.all([
      start(new GenericContainer(IMAGES.redis).withExposedPorts(6379).withWaitStrategy(Wait.forLogMessage("Ready to accept connections"))),
      start(new GenericContainer(IMAGES.mongodb).withExposedPorts(27017).withWaitStrategy(Wait.forLogMessage(/Waiting for connections/))),
      start(
        new GenericContainer(IMAGES.kafka)
          .withExposedPorts({ container: kafkaPort, host: kafkaPort })
          .withEnvironment({
            KAFKA_NODE_ID: "1",
            KAFKA_PROCESS_ROLES: "broker,controller",
            KAFKA_LISTENERS: `PLAINTEXT://0.0.0.0:${kafkaPort},CONTROLLER://localhost:9093`,
            KAFKA_ADVERTISED_LISTENERS: `PLAINTEXT://localhost:${kafkaPort}`,
            KAFKA_CONTROLLER_LISTENER_NAMES: "CONTROLLER",
            KAFKA_LISTENER_SECURITY_PROTOCOL_MAP: "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            KAFKA_CONTROLLER_QUORUM_VOTERS: "1@localhost:9093",
            KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR: "1",
            KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR: "1",
            KAFKA_TRANSACTION_STATE_LOG_MIN_ISR: "1",
            KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS: "0",
            KAFKA_AUTO_CREATE_TOPICS_ENABLE: "false",
          })
          .withWaitStrategy(Wait.forLogMessage(/Kafka Server started/)),
      ),
      start(new GenericContainer(IMAGES.registry).withExposedPorts(8080).withWaitStrategy(Wait.forHttp("/apis/ccompat/v7/subjects", 8080))),
    ]);
    return {
      settings: {
        kafkaBrokers: [`localhost:${kafkaPort}`],
        redisUrl: `redis://${redis.getHost()}:${redis.getMappedPort(6379)}`,
        mongodbUrl: `mongodb://${mongo.getHost()}:${mongo.getMappedPort(27017)}/idd`,
        schemaRegistryUrl: `http://${registry.getHost()}:${registry.getMappedPort(8080)}/apis/ccompat/v7`,
        security: { kafka: {}, registry: {} },
        source: "testcontainers",
      },
      stop: async () => {
        await Promise.all(started.map((s) => s.stop()));
      },
    };
  } catch (e) {
    await Promise.all(started.map((s) => s.stop().catch(() => {})));
    throw e;
  }
}
