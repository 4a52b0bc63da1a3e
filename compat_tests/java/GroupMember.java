// Java kafka-clients as one member of ../SCENARIOS.md's `group` scenario, compiled at test time
// against Kafka 4.4's jars (compat_tests/test_groups_java.py):
//
//   GroupMember group-member --bootstrap B --topic T --group G
//               [--assignor range|roundrobin|sticky|cooperative-sticky]
//               [--instance-id ID] [--session-timeout-ms N]
//
// The classic group protocol, explicitly (the default of Kafka 4 clients, but the consumer
// protocol would be a different scenario). Eager assignors revoke everything and then assign the
// whole new set; the cooperative one revokes and assigns increments. Either way the member keeps
// the set itself (removing what is revoked or lost, adding what is assigned) and prints it after
// every callback. Only the polling thread touches the consumer (it is not thread-safe): the stdin
// reader just raises a flag the loop checks between polls, so a close never interrupts a commit.

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.TreeSet;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.CooperativeStickyAssignor;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.consumer.RangeAssignor;
import org.apache.kafka.clients.consumer.RoundRobinAssignor;
import org.apache.kafka.clients.consumer.StickyAssignor;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

public final class GroupMember {
    private static volatile boolean closing = false;

    public static void main(String[] argv) {
        if (argv.length == 0 || !argv[0].equals("group-member")) {
            throw new IllegalArgumentException("usage: GroupMember group-member --bootstrap B ...");
        }
        String bootstrap = null, topic = null, group = null, assignor = null, instanceId = null;
        int sessionTimeoutMs = 6000;
        for (int i = 1; i < argv.length; i += 2) {
            if (i + 1 >= argv.length) {
                throw new IllegalArgumentException("no value for " + argv[i]);
            }
            String value = argv[i + 1];
            switch (argv[i]) {
                case "--bootstrap" -> bootstrap = value;
                case "--topic" -> topic = value;
                case "--group" -> group = value;
                case "--assignor" -> assignor = value;
                case "--instance-id" -> instanceId = value;
                case "--session-timeout-ms" -> sessionTimeoutMs = Integer.parseInt(value);
                default -> throw new IllegalArgumentException("unknown option " + argv[i]);
            }
        }
        if (bootstrap == null || topic == null || group == null) {
            throw new IllegalArgumentException("--bootstrap, --topic and --group are required");
        }

        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        props.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "classic");
        props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        props.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, String.valueOf(sessionTimeoutMs));
        props.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, String.valueOf(sessionTimeoutMs / 3));
        props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        if (assignor != null) {
            props.put(ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG, assignorClass(assignor));
        }
        if (instanceId != null) {
            props.put(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG, instanceId);
        }

        Thread commands = new Thread(GroupMember::readCommands, "stdin-commands");
        commands.setDaemon(true);
        commands.start();

        TreeSet<Integer> owned = new TreeSet<>();
        ConsumerRebalanceListener listener = new ConsumerRebalanceListener() {
            @Override
            public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
                partitions.forEach(tp -> owned.remove(tp.partition()));
                reportAssignment(owned);
            }

            @Override
            public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
                partitions.forEach(tp -> owned.add(tp.partition()));
                reportAssignment(owned);
            }

            @Override
            public void onPartitionsLost(Collection<TopicPartition> partitions) {
                partitions.forEach(tp -> owned.remove(tp.partition()));
                reportAssignment(owned);
            }
        };

        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(props)) {
            consumer.subscribe(List.of(topic), listener);
            while (!closing) {
                ConsumerRecords<byte[], byte[]> records = consumer.poll(Duration.ofMillis(200));
                Map<TopicPartition, OffsetAndMetadata> next = new TreeMap<>(
                        (a, b) -> Integer.compare(a.partition(), b.partition()));
                for (ConsumerRecord<byte[], byte[]> r : records) {
                    String value = r.value() == null ? null : new String(r.value(), StandardCharsets.UTF_8);
                    emit("{\"event\": \"record\", \"partition\": " + r.partition() + ", \"offset\": "
                            + r.offset() + ", \"value\": " + quote(value) + "}");
                    next.put(new TopicPartition(r.topic(), r.partition()), new OffsetAndMetadata(r.offset() + 1));
                }
                if (!next.isEmpty()) {
                    // Throws (ending the driver, the exception on stderr) when the commit fails.
                    consumer.commitSync(next);
                    next.forEach((tp, om) -> emit("{\"event\": \"committed\", \"partition\": "
                            + tp.partition() + ", \"offset\": " + om.offset() + "}"));
                }
            }
        }
        emit("{\"event\": \"closed\"}");
        System.exit(0);
    }

    static String assignorClass(String name) {
        return switch (name) {
            case "range" -> RangeAssignor.class.getName();
            case "roundrobin" -> RoundRobinAssignor.class.getName();
            case "sticky" -> StickyAssignor.class.getName();
            case "cooperative-sticky" -> CooperativeStickyAssignor.class.getName();
            default -> throw new IllegalArgumentException("unknown assignor " + name);
        };
    }

    /** Raises the closing flag on "close", or when stdin ends (the harness is gone). */
    static void readCommands() {
        try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
            String line;
            while ((line = in.readLine()) != null) {
                if (line.strip().equals("close")) {
                    break;
                }
            }
        } catch (IOException e) {
            // stdin is gone: close as if told to
        }
        closing = true;
    }

    static void reportAssignment(TreeSet<Integer> owned) {
        StringBuilder list = new StringBuilder();
        for (int p : owned) {
            list.append(list.length() == 0 ? "" : ", ").append(p);
        }
        emit("{\"event\": \"assigned\", \"partitions\": [" + list + "]}");
    }

    static String quote(String s) {
        if (s == null) {
            return "null";
        }
        StringBuilder out = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            switch (c) {
                case '"' -> out.append("\\\"");
                case '\\' -> out.append("\\\\");
                default -> {
                    if (c < 0x20) {
                        out.append(String.format("\\u%04x", (int) c));
                    } else {
                        out.append(c);
                    }
                }
            }
        }
        return out.append('"').toString();
    }

    static synchronized void emit(String line) {
        System.out.println(line);
        System.out.flush();
    }
}
