// Java kafka-clients 4.4 side of the leader-failover tests (compat_tests/test_ride_through.py),
// compiled at test time against Kafka 4.4's jars:
//
//   RideDriver produce --bootstrap B --topic T --count N --pace-ms P --mark M
//       an idempotent producer (acks=all) sends the values "0" .. "N-1" to partition 0, one
//       every P ms; after the M-th send prints {"event": "mark"} (the test then kills the
//       partition's leader); waits for every send and prints
//       {"event": "produced", "acked": [...], "failed": [...], "errors": [...]}.
//   RideDriver consume --bootstrap B --topic T --count N --timeout-ms MS
//       reads partition 0 from its start (assigned, no group) until it holds N records or MS
//       pass; prints {"event": "consumed", "records": [[offset, value], ...]}.
//
// Exits non-zero, with the exception on stderr, on a bad argument.

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public final class RideDriver {
    private RideDriver() {}

    public static void main(String[] argv) throws Exception {
        if (argv.length == 0) {
            throw new IllegalArgumentException("usage: RideDriver produce|consume --bootstrap B ...");
        }
        String bootstrap = null, topic = null;
        int count = 0, paceMs = 0, mark = -1, timeoutMs = 90_000;
        for (int i = 1; i < argv.length; i += 2) {
            if (i + 1 >= argv.length) {
                throw new IllegalArgumentException("no value for " + argv[i]);
            }
            String value = argv[i + 1];
            switch (argv[i]) {
                case "--bootstrap" -> bootstrap = value;
                case "--topic" -> topic = value;
                case "--count" -> count = Integer.parseInt(value);
                case "--pace-ms" -> paceMs = Integer.parseInt(value);
                case "--mark" -> mark = Integer.parseInt(value);
                case "--timeout-ms" -> timeoutMs = Integer.parseInt(value);
                default -> throw new IllegalArgumentException("unknown option " + argv[i]);
            }
        }
        switch (argv[0]) {
            case "produce" -> produce(bootstrap, topic, count, paceMs, mark);
            case "consume" -> consume(bootstrap, topic, count, timeoutMs);
            default -> throw new IllegalArgumentException("unknown command " + argv[0]);
        }
    }

    static synchronized void emit(String json) {
        System.out.println(json);
        System.out.flush();
    }

    static String quoted(String text) {
        return "\"" + text.replace("\\", "\\\\").replace("\"", "\\\"").replace("\n", " ") + "\"";
    }

    static void produce(String bootstrap, String topic, int count, int paceMs, int mark)
            throws InterruptedException {
        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ProducerConfig.ACKS_CONFIG, "all");
        props.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
        props.put(ProducerConfig.LINGER_MS_CONFIG, "0");
        props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class);
        props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class);
        Set<Integer> acked = Collections.synchronizedSet(new TreeSet<>());
        Set<Integer> failed = Collections.synchronizedSet(new TreeSet<>());
        Set<String> errors = Collections.synchronizedSet(new TreeSet<>());
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(props)) {
            for (int i = 0; i < count; i++) {
                final int value = i;
                byte[] bytes = Integer.toString(i).getBytes(StandardCharsets.UTF_8);
                producer.send(new ProducerRecord<>(topic, 0, null, bytes), (metadata, error) -> {
                    if (error == null) {
                        acked.add(value);
                    } else {
                        failed.add(value);
                        errors.add(error.toString());
                    }
                });
                if (i + 1 == mark) {
                    emit("{\"event\": \"mark\"}");
                }
                Thread.sleep(paceMs);
            }
            producer.flush();
        }
        List<String> quotedErrors = new ArrayList<>();
        for (String error : errors) {
            quotedErrors.add(quoted(error));
        }
        emit("{\"event\": \"produced\", \"acked\": " + acked + ", \"failed\": " + failed
                + ", \"errors\": " + quotedErrors + "}");
    }

    static void consume(String bootstrap, String topic, int count, int timeoutMs) {
        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class);
        props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class);
        List<String> records = new ArrayList<>();
        long deadline = System.currentTimeMillis() + timeoutMs;
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(props)) {
            TopicPartition partition = new TopicPartition(topic, 0);
            consumer.assign(List.of(partition));
            consumer.seekToBeginning(List.of(partition));
            while (records.size() < count && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(200))) {
                    String value = new String(r.value(), StandardCharsets.UTF_8);
                    records.add("[" + r.offset() + ", " + quoted(value) + "]");
                }
            }
        }
        emit("{\"event\": \"consumed\", \"records\": " + records + "}");
    }
}
