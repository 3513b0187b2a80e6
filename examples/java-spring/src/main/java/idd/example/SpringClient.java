package idd.example;

import com.fasterxml.jackson.annotation.JsonIgnoreProperties;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.Semaphore;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.springframework.kafka.core.DefaultKafkaConsumerFactory;
import org.springframework.kafka.core.DefaultKafkaProducerFactory;
import org.springframework.kafka.listener.ContainerProperties;
import org.springframework.kafka.listener.KafkaMessageListenerContainer;
import org.springframework.kafka.requestreply.ReplyingKafkaTemplate;
import org.springframework.kafka.support.serializer.JsonDeserializer;
import org.springframework.kafka.support.serializer.JsonSerializer;

/**
 * Asks idd for numbers with Spring's ReplyingKafkaTemplate (JSON values). Args: brokers, sequences
 * (comma list), requests, requests in flight, [request topic]. Prints one line per number:
 * sequence TAB number TAB sendNanos TAB replyNanos (System.nanoTime); a summary goes to stderr.
 */
public final class SpringClient {
  record IdRequest(String requestId, String sequence, int count) {}

  @JsonIgnoreProperties(ignoreUnknown = true)
  record Range(long first, long last) {}

  @JsonIgnoreProperties(ignoreUnknown = true)
  record Failure(String code, String message) {}

  @JsonIgnoreProperties(ignoreUnknown = true)
  record IdReply(String requestId, String sequence, String status, List<Range> ranges, Failure error) {}

  public static void main(String[] args) throws Exception {
    String brokers = args[0];
    List<String> sequences = List.of(args[1].split(","));
    int requests = Integer.parseInt(args[2]);
    Semaphore inFlight = new Semaphore(Integer.parseInt(args[3]));
    String requestTopic = args.length > 4 ? args[4] : "idd.requests";
    String replyTopic = "idd-spring-replies-" + UUID.randomUUID();
    Map<String, Object> common = Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, brokers);
    try (Admin admin = Admin.create(common)) { // the client creates its reply topic
      admin.createTopics(List.of(new NewTopic(replyTopic, 1, (short) 1))).all().get();
    }

    // No partitioner set: Kafka's default one puts a keyed record on murmur2(key) % partitions.
    var producers = new DefaultKafkaProducerFactory<String, IdRequest>(
        Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, brokers, ProducerConfig.LINGER_MS_CONFIG, 1),
        new StringSerializer(), new JsonSerializer<IdRequest>().noTypeInfo());
    var consumers = new DefaultKafkaConsumerFactory<String, IdReply>(
        Map.of(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, brokers, ConsumerConfig.GROUP_ID_CONFIG, replyTopic,
            ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest"),
        new StringDeserializer(), new JsonDeserializer<>(IdReply.class, false));
    var replies = new KafkaMessageListenerContainer<>(consumers, new ContainerProperties(replyTopic));
    var template = new ReplyingKafkaTemplate<>(producers, replies);
    template.setDefaultReplyTimeout(Duration.ofSeconds(30));
    template.start();
    if (!template.waitForAssignment(Duration.ofSeconds(30))) throw new IllegalStateException("reply topic not assigned");

    AtomicInteger numbers = new AtomicInteger();
    AtomicInteger failures = new AtomicInteger();
    long started = System.nanoTime();
    for (int i = 0; i < requests; i++) {
      inFlight.acquire();
      String sequence = sequences.get(i % sequences.size());
      var request = new IdRequest(UUID.randomUUID().toString(), sequence, 1);
      long sent = System.nanoTime();
      template.sendAndReceive(new ProducerRecord<>(requestTopic, sequence, request)).whenComplete((record, error) -> {
        long received = System.nanoTime();
        IdReply reply = record == null ? null : record.value();
        if (reply == null || !"OK".equals(reply.status())) {
          failures.incrementAndGet();
          System.err.println(sequence + ": " + (error != null ? error : reply == null ? "no value" : reply.error()));
        } else {
          StringBuilder out = new StringBuilder();
          for (Range r : reply.ranges())
            for (long n = r.first(); n <= r.last(); n++, numbers.incrementAndGet())
              out.append(sequence).append('\t').append(n).append('\t').append(sent).append('\t').append(received).append('\n');
          synchronized (System.out) {
            System.out.print(out);
          }
        }
        inFlight.release();
      });
    }
    inFlight.acquire(Integer.parseInt(args[3])); // every reply is in
    double seconds = (System.nanoTime() - started) / 1e9;
    System.out.flush();
    System.err.printf("spring: %d requests, %d numbers, %d failures in %.1fs (%.0f requests/s)%n",
        requests, numbers.get(), failures.get(), seconds, requests / seconds);
    template.stop();
    producers.destroy();
    try (Admin admin = Admin.create(common)) {
      admin.deleteTopics(List.of(replyTopic)).all().get();
    }
    System.exit(failures.get() == 0 ? 0 : 1);
  }
}
