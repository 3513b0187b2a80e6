package idd.example;

import com.fasterxml.jackson.annotation.JsonIgnoreProperties;
import com.fasterxml.jackson.annotation.JsonInclude;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.UUID;
import java.util.function.Function;
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
 * An invoice flow on a gapless sequence with Spring's ReplyingKafkaTemplate (JSON values): take two
 * numbers, confirm one, void the other. Args: brokers, a gapless sequence, [request topic]. Each
 * number idd issues must be confirmed (used) or voided with a reason within the sequence's confirm
 * timeout (docs/sequences.md: Gapless numbering). Prints `confirmed N`, `voided N` and the period (or `-`), one
 * a line.
 */
public final class GaplessFlow {
  /** An ISSUE leaves action, numbers, reason and period out; a CONFIRM or VOID names what it settles. */
  @JsonInclude(JsonInclude.Include.NON_NULL)
  record IdRequest(String requestId, String sequence, int count, String action, List<Long> numbers, String reason,
      String period) {
    static IdRequest issue(String sequence, int count) {
      return new IdRequest(UUID.randomUUID().toString(), sequence, count, null, null, null, null);
    }

    static IdRequest settle(String sequence, String action, List<Long> numbers, String reason, String period) {
      return new IdRequest(UUID.randomUUID().toString(), sequence, 1, action, numbers, reason, period);
    }
  }

  @JsonIgnoreProperties(ignoreUnknown = true)
  record Range(long first, long last) {}

  @JsonIgnoreProperties(ignoreUnknown = true)
  record Failure(String code, String message) {}

  @JsonIgnoreProperties(ignoreUnknown = true)
  record IdReply(String requestId, String sequence, String period, String status, List<Range> ranges, Failure error) {}

  public static void main(String[] args) throws Exception {
    String brokers = args[0];
    String sequence = args[1];
    String requestTopic = args.length > 2 ? args[2] : "idd.requests";
    String replyTopic = "idd-spring-gapless-" + UUID.randomUUID();
    Map<String, Object> common = Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, brokers);
    try (Admin admin = Admin.create(common)) {
      admin.createTopics(List.of(new NewTopic(replyTopic, 1, (short) 1))).all().get();
    }
    var producers = new DefaultKafkaProducerFactory<String, IdRequest>(
        common, new StringSerializer(), new JsonSerializer<IdRequest>().noTypeInfo());
    var consumers = new DefaultKafkaConsumerFactory<String, IdReply>(
        Map.of(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, brokers, ConsumerConfig.GROUP_ID_CONFIG, replyTopic,
            ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest"),
        new StringDeserializer(), new JsonDeserializer<>(IdReply.class, false));
    var replies = new KafkaMessageListenerContainer<>(consumers, new ContainerProperties(replyTopic));
    var template = new ReplyingKafkaTemplate<>(producers, replies);
    template.start();
    try {
      if (!template.waitForAssignment(Duration.ofSeconds(30))) throw new IllegalStateException("reply topic not assigned");
      // One request, its reply; a retry would reuse the requestId (and get the same answer).
      Function<IdRequest, IdReply> ask = request -> {
        var record = new ProducerRecord<>(requestTopic, sequence, request);
        IdReply reply = template.sendAndReceive(record, Duration.ofSeconds(30)).join().value();
        if (!"OK".equals(reply.status())) {
          String action = Objects.requireNonNullElse(request.action(), "ISSUE");
          throw new IllegalStateException(action + ": " + reply.error().code() + ": " + reply.error().message());
        }
        return reply;
      };

      IdReply taken = ask.apply(IdRequest.issue(sequence, 2)); // two invoice numbers, pending until settled
      List<Long> numbers = new ArrayList<>();
      for (Range r : taken.ranges())
        for (long n = r.first(); n <= r.last(); n++) numbers.add(n);
      String period = taken.period(); // a sequence that restarts (daily, monthly, yearly) needs it to settle
      // The invoice was written: its number is used.
      ask.apply(IdRequest.settle(sequence, "CONFIRM", List.of(numbers.get(0)), null, period));
      // The other number will never be used, and why.
      ask.apply(IdRequest.settle(sequence, "VOID", List.of(numbers.get(1)), "order cancelled before invoicing", period));
      System.out.printf("confirmed %d%nvoided %d%nperiod %s%n", numbers.get(0), numbers.get(1), period == null ? "-" : period);
    } finally {
      template.stop(); // the reply listener
      template.destroy(); // its timeout scheduler: both threads would keep the JVM running
      producers.destroy();
      try (Admin admin = Admin.create(common)) {
        admin.deleteTopics(List.of(replyTopic)).all().get();
      }
    }
  }
}
