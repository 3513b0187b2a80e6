package idd.example;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Asks idd for numbers the way Quarkus / SmallRye Reactive Messaging's KafkaRequestReply does, with
 * exactly its headers: REPLY_CORRELATION_ID (a UUID string, its default "uuid" handler),
 * REPLY_TOPIC (its default, the request topic + "-replies") and REPLY_PARTITION (4-byte big-endian
 * int, as KafkaRequestReply.replyPartitionToBytes writes it); replies are matched by the
 * REPLY_CORRELATION_ID idd echoes. A plain Kafka client stands in for a Quarkus application: the
 * wire is the same, and this builds with the Spring example's jar. An error reply becomes an
 * exception the way a ReplyFailureHandler would make one, from the idd_errorCode header.
 *
 * Args: brokers, sequences (comma list), requests, requests in flight, [request topic]. Prints one
 * line per number: sequence TAB number TAB sendNanos TAB replyNanos (System.nanoTime); then asks
 * for a sequence that does not exist; a summary goes to stderr.
 */
public final class SmallRyeClient {
  static final ObjectMapper JSON = new ObjectMapper();

  /** What a SmallRye ReplyFailureHandler would return for an idd reply: null for numbers. */
  static Throwable failureOf(ConsumerRecord<String, String> reply) {
    Header code = reply.headers().lastHeader("idd_errorCode");
    return code == null ? null : new IllegalStateException(new String(code.value(), StandardCharsets.UTF_8));
  }

  public static void main(String[] args) throws Exception {
    String brokers = args[0];
    List<String> sequences = List.of(args[1].split(","));
    int requests = Integer.parseInt(args[2]);
    int window = Integer.parseInt(args[3]);
    String requestTopic = args.length > 4 ? args[4] : "idd.requests";
    String replyTopic = requestTopic + "-replies";
    Map<String, Object> common = Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, brokers);
    try (Admin admin = Admin.create(common)) { // SmallRye expects the reply topic to exist
      admin.createTopics(List.of(new NewTopic(replyTopic, 1, (short) 1))).all().get();
    } catch (java.util.concurrent.ExecutionException e) {
      if (!(e.getCause() instanceof TopicExistsException)) throw e;
    }

    var pending = new ConcurrentHashMap<String, CompletableFuture<ConsumerRecord<String, String>>>();
    var consumer = new KafkaConsumer<>(
        Map.<String, Object>of(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, brokers, ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false),
        new StringDeserializer(), new StringDeserializer());
    TopicPartition replies = new TopicPartition(replyTopic, 0);
    consumer.assign(List.of(replies));
    consumer.seekToEnd(List.of(replies));
    consumer.position(replies); // resolved now: replies to requests sent from here on are read
    AtomicBoolean running = new AtomicBoolean(true);
    Thread reader = new Thread(() -> {
      while (running.get()) {
        for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(100))) {
          Header id = r.headers().lastHeader("REPLY_CORRELATION_ID");
          if (id == null) continue;
          var waiting = pending.remove(new String(id.value(), StandardCharsets.UTF_8));
          if (waiting != null) waiting.complete(r);
        }
      }
      consumer.close();
    });
    reader.start();

    var producer = new KafkaProducer<>(
        Map.<String, Object>of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, brokers, ProducerConfig.LINGER_MS_CONFIG, 1),
        new StringSerializer(), new StringSerializer());
    byte[] partition = ByteBuffer.allocate(4).putInt(0).array();
    java.util.function.Function<String, CompletableFuture<ConsumerRecord<String, String>>> ask = sequence -> {
      String correlation = UUID.randomUUID().toString();
      var reply = new CompletableFuture<ConsumerRecord<String, String>>();
      pending.put(correlation, reply);
      String body = "{\"requestId\":\"" + UUID.randomUUID() + "\",\"sequence\":\"" + sequence + "\",\"count\":1}";
      var record = new ProducerRecord<>(requestTopic, sequence, body);
      record.headers().add("REPLY_CORRELATION_ID", correlation.getBytes(StandardCharsets.UTF_8));
      record.headers().add("REPLY_TOPIC", replyTopic.getBytes(StandardCharsets.UTF_8));
      record.headers().add("REPLY_PARTITION", partition);
      producer.send(record);
      return reply.orTimeout(30, TimeUnit.SECONDS);
    };

    Semaphore inFlight = new Semaphore(window);
    AtomicInteger numbers = new AtomicInteger();
    AtomicInteger failures = new AtomicInteger();
    long started = System.nanoTime();
    for (int i = 0; i < requests; i++) {
      inFlight.acquire();
      String sequence = sequences.get(i % sequences.size());
      long sent = System.nanoTime();
      ask.apply(sequence).whenComplete((record, error) -> {
        long received = System.nanoTime();
        try {
          Throwable failure = error != null ? error : failureOf(record);
          if (failure != null) throw failure;
          JsonNode reply = JSON.readTree(record.value());
          StringBuilder out = new StringBuilder();
          for (JsonNode r : reply.get("ranges"))
            for (long n = r.get("first").asLong(); n <= r.get("last").asLong(); n++, numbers.incrementAndGet())
              out.append(sequence).append('\t').append(n).append('\t').append(sent).append('\t').append(received).append('\n');
          synchronized (System.out) {
            System.out.print(out);
          }
        } catch (Throwable t) {
          failures.incrementAndGet();
          System.err.println(sequence + ": " + t);
        }
        inFlight.release();
      });
    }
    inFlight.acquire(window); // every reply is in
    double seconds = (System.nanoTime() - started) / 1e9;
    System.out.flush();

    // The error path: an unknown sequence's reply becomes the failure a ReplyFailureHandler gives.
    var missing = ask.apply("no-such-sequence-" + UUID.randomUUID().toString().substring(0, 8)).get(30, TimeUnit.SECONDS);
    Throwable failure = failureOf(missing);
    System.err.printf("smallrye: %d requests, %d numbers, %d failures in %.1fs, %d in flight; an unknown sequence: %s%n",
        requests, numbers.get(), failures.get(), seconds, window, failure == null ? "no failure" : failure.getMessage());
    running.set(false);
    reader.join();
    producer.close();
    System.exit(failures.get() == 0 && failure != null ? 0 : 1);
  }
}
