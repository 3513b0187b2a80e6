/**
 * The kafkajs client for one cluster (brokers, TLS, SASL, logging, retries) and the login every
 * first connection goes through, so that a refused login surfaces as KAFKA_AUTH_FAILED.
 */
import type { Admin, Consumer, ConsumerConfig, Kafka, KafkaConfig, Producer, ProducerConfig } from "kafkajs";
import type { Logger } from "pino";
import { reveal } from "../../config/secret.js";
import type { KafkaSecurity } from "../../config/security.js";
import { kafkaAuthFailure } from "./errors.js";
import { loadKafkajs } from "./kafkajs-modules.js";
import { kafkaLogCreator } from "./log-creator.js";

export interface KafkaOptions {
  brokers: string[];
  clientId: string;
  logger?: Logger;
  security?: KafkaSecurity;
}

/** kafkajs's TLS and SASL options for `security` (kafkajs spells the mechanisms its own way). */
function kafkajsSecurity(security: KafkaSecurity = {}): Pick<KafkaConfig, "ssl" | "sasl"> {
  const out: Pick<KafkaConfig, "ssl" | "sasl"> = {};
  if (security.tls) {
    const { ca, cert, key } = security.tls;
    out.ssl = ca || cert ? { ...(ca && { ca: [ca] }), ...(cert && { cert }), ...(key && { key }) } : true;
  }
  if (security.sasl) {
    const { mechanism, username } = security.sasl;
    const password = reveal(security.sasl.password);
    out.sasl =
      mechanism === "plain"
        ? { mechanism: "plain", username, password }
        : mechanism === "scram-sha-256"
          ? { mechanism: "scram-sha-256", username, password }
          : { mechanism: "scram-sha-512", username, password };
  }
  return out;
}

/** kafkajs's client settings for `opts` (all brokers or, for a question to one broker, that one). */
function kafkajsConfig(opts: KafkaOptions, brokers: string[]): KafkaConfig {
  const { logLevel } = loadKafkajs();
  return {
    clientId: opts.clientId,
    brokers,
    ...kafkajsSecurity(opts.security),
    logLevel: opts.logger ? logLevel.WARN : logLevel.NOTHING,
    ...(opts.logger && { logCreator: kafkaLogCreator(opts.logger) }),
    retry: { retries: 8, initialRetryTime: 100, maxRetryTime: 5000 },
  };
}

export class KafkaConnection {
  readonly #kafka: Kafka;
  readonly #opts: KafkaOptions;

  constructor(opts: KafkaOptions) {
    this.#opts = opts;
    this.#kafka = new (loadKafkajs().Kafka)(kafkajsConfig(opts, opts.brokers));
  }

  /** An admin, not connected yet (see `login`). */
  admin(): Admin {
    return this.#kafka.admin();
  }

  /**
   * An admin whose requests all go to `broker` ("host:port", as the cluster's metadata names it),
   * not connected yet: it knows no other broker until it reads metadata, and metadata requests go
   * to a broker it is connected to. One try per request, no log: its caller asks again.
   */
  adminAt(broker: string): Admin {
    const config = kafkajsConfig(this.#opts, [broker]);
    const { Kafka, logLevel } = loadKafkajs();
    return new Kafka({ ...config, logLevel: logLevel.NOTHING, logCreator: undefined, retry: { retries: 0 } }).admin();
  }

  /** A producer, not connected yet (see `login`). */
  producer(config: ProducerConfig): Producer {
    return this.#kafka.producer(config);
  }

  /** A consumer group member, not connected yet (see `login`). */
  consumer(config: ConsumerConfig): Consumer {
    return this.#kafka.consumer(config);
  }

  /** Connects `client`; a refused login or an untrusted broker certificate throws a coded IddError. */
  async login(client: { connect(): Promise<void> }): Promise<void> {
    try {
      await client.connect();
    } catch (e) {
      throw kafkaAuthFailure(e, this.#opts.brokers, this.#opts.security);
    }
  }
}
