// Java kafka-clients driver of ../SCENARIOS.md, compiled at test time against Kafka 4.4's jars
// (compat_tests/test_clients_java.py). Scenarios:
//
//   produce-consume  the contract's scenario: the producer in its DEFAULT configuration
//                    (idempotent, acks=all), the consumer by assign + seek, offsetsForTimes
//                    for the replay;
//   admin            AdminClient step by step, one {"event": "admin", "step": ...} line per
//                    step with what it got (or "error"); the test asserts on them.
//
// One JVM runs several scenarios when their argument lists are separated by "--":
//   ClientDriver produce-consume --bootstrap B --topic t1 --partitions 3 -- admin --bootstrap B --topic t2
// Every line printed carries "scenario" (the scenario that printed it). Exits non-zero, with the
// exception on stderr, when a scenario could not finish.

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.DeletedRecords;
import org.apache.kafka.clients.admin.DescribeClusterResult;
import org.apache.kafka.clients.admin.ListOffsetsResult;
import org.apache.kafka.clients.admin.LogDirDescription;
import org.apache.kafka.clients.admin.NewPartitions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.RecordsToDelete;
import org.apache.kafka.clients.admin.ReplicaInfo;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndTimestamp;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public final class ClientDriver {
    static final long MAX_WAIT_MS = 60_000;
    static final long CALL_TIMEOUT_S = 30;

    private ClientDriver() {}

    // --- arguments and output ---------------------------------------------------------------

    static final class Args {
        String scenario;
        String bootstrap;
        String topic;
        int partitions = 1;
        int count = 60;
        long startTs = 1700000000000L;
        String compression = "none";

        long threshold() {
            return startTs + (count / 2) * 1000L;
        }

        static Args parse(List<String> argv) {
            Args a = new Args();
            a.scenario = argv.get(0);
            for (int i = 1; i < argv.size(); i += 2) {
                String name = argv.get(i);
                if (i + 1 >= argv.size()) {
                    throw new IllegalArgumentException("no value for " + name);
                }
                String value = argv.get(i + 1);
                switch (name) {
                    case "--bootstrap" -> a.bootstrap = value;
                    case "--topic" -> a.topic = value;
                    case "--partitions" -> a.partitions = Integer.parseInt(value);
                    case "--count" -> a.count = Integer.parseInt(value);
                    case "--start-ts" -> a.startTs = Long.parseLong(value);
                    case "--compression" -> a.compression = value;
                    default -> throw new IllegalArgumentException("unknown option " + name);
                }
            }
            if (a.bootstrap == null || a.topic == null) {
                throw new IllegalArgumentException("--bootstrap and --topic are required");
            }
            return a;
        }
    }

    static String scenario = "";

    /** One JSON line: keys and values alternate; values are String, Number, Boolean, null,
     *  List or Map (rendered recursively). */
    static void emit(Object... kv) {
        Map<String, Object> event = new LinkedHashMap<>();
        for (int i = 0; i < kv.length; i += 2) {
            event.put((String) kv[i], kv[i + 1]);
        }
        event.put("scenario", scenario);
        StringBuilder out = new StringBuilder();
        json(out, event);
        System.out.println(out);
        System.out.flush();
    }

    static void json(StringBuilder out, Object value) {
        if (value == null) {
            out.append("null");
        } else if (value instanceof String s) {
            out.append('"');
            for (char c : s.toCharArray()) {
                switch (c) {
                    case '"' -> out.append("\\\"");
                    case '\\' -> out.append("\\\\");
                    case '\n' -> out.append("\\n");
                    case '\r' -> out.append("\\r");
                    case '\t' -> out.append("\\t");
                    default -> {
                        if (c < 0x20) {
                            out.append(String.format("\\u%04x", (int) c));
                        } else {
                            out.append(c);
                        }
                    }
                }
            }
            out.append('"');
        } else if (value instanceof Number || value instanceof Boolean) {
            out.append(value);
        } else if (value instanceof Map<?, ?> map) {
            out.append('{');
            boolean first = true;
            for (Map.Entry<?, ?> e : map.entrySet()) {
                if (!first) out.append(", ");
                first = false;
                json(out, String.valueOf(e.getKey()));
                out.append(": ");
                json(out, e.getValue());
            }
            out.append('}');
        } else if (value instanceof Collection<?> list) {
            out.append('[');
            boolean first = true;
            for (Object item : list) {
                if (!first) out.append(", ");
                first = false;
                json(out, item);
            }
            out.append(']');
        } else {
            json(out, value.toString());
        }
    }

    static String text(byte[] data) {
        return data == null ? null : new String(data, StandardCharsets.UTF_8);
    }

    static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    // --- produce-consume ----------------------------------------------------------------------

    static void produceConsume(Args a) throws Exception {
        produce(a);
        consume(a);
    }

    static void produce(Args a) throws Exception {
        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, a.bootstrap);
        props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        if (!a.compression.equals("none")) {
            props.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, a.compression);
        }
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(props)) {
            List<Future<RecordMetadata>> futures = new ArrayList<>();
            for (int i = 0; i < a.count; i++) {
                List<Header> headers = List.of(
                        new RecordHeader("h1", bytes("v" + i)), new RecordHeader("h2", new byte[0]));
                futures.add(producer.send(new ProducerRecord<>(a.topic, null, a.startTs + i * 1000L,
                        bytes("key-" + (i % 7)), bytes("value-" + i), headers)));
            }
            producer.flush();
            for (int i = 0; i < a.count; i++) {
                RecordMetadata m = futures.get(i).get(MAX_WAIT_MS, TimeUnit.MILLISECONDS);
                emit("event", "produced", "i", i, "partition", m.partition(), "offset", m.offset());
            }
        }
    }

    static void emitRecord(String phase, ConsumerRecord<byte[], byte[]> r) {
        List<Object> headers = new ArrayList<>();
        for (Header h : r.headers()) {
            headers.add(java.util.Arrays.asList(h.key(), text(h.value())));
        }
        emit("event", "record", "phase", phase, "partition", r.partition(), "offset", r.offset(),
                "key", text(r.key()), "value", text(r.value()), "headers", headers,
                "timestamp", r.timestamp());
    }

    static void consume(Args a) {
        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, a.bootstrap);
        props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        props.put(ConsumerConfig.FETCH_MAX_WAIT_MS_CONFIG, "100");
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(props)) {
            List<TopicPartition> partitions = new ArrayList<>();
            for (int p = 0; p < a.partitions; p++) {
                partitions.add(new TopicPartition(a.topic, p));
            }
            consumer.assign(partitions);
            consumer.seekToBeginning(partitions);
            int read = 0;
            long deadline = System.currentTimeMillis() + MAX_WAIT_MS;
            while (read < a.count) {
                if (System.currentTimeMillis() > deadline) {
                    throw new IllegalStateException("read " + read + " of " + a.count + " records");
                }
                for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(500))) {
                    emitRecord("beginning", r);
                    read++;
                }
            }

            Map<TopicPartition, Long> query = new HashMap<>();
            for (TopicPartition tp : partitions) {
                query.put(tp, a.threshold());
            }
            Map<TopicPartition, OffsetAndTimestamp> found =
                    consumer.offsetsForTimes(query, Duration.ofSeconds(CALL_TIMEOUT_S));
            Map<TopicPartition, Long> ends =
                    consumer.endOffsets(partitions, Duration.ofSeconds(CALL_TIMEOUT_S));
            Map<TopicPartition, Long> until = new HashMap<>();
            for (TopicPartition tp : partitions) {
                OffsetAndTimestamp hit = found.get(tp);
                if (hit != null) {
                    consumer.seek(tp, hit.offset());
                    until.put(tp, ends.get(tp));
                } else {
                    consumer.seekToEnd(List.of(tp));
                }
            }
            deadline = System.currentTimeMillis() + MAX_WAIT_MS;
            while (!reached(consumer, until)) {
                if (System.currentTimeMillis() > deadline) {
                    throw new IllegalStateException("replay did not reach the ends " + ends);
                }
                for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(500))) {
                    Long end = until.get(new TopicPartition(r.topic(), r.partition()));
                    if (end != null && r.offset() < end) {
                        emitRecord("from_timestamp", r);
                    }
                }
            }
        }
    }

    static boolean reached(KafkaConsumer<byte[], byte[]> consumer, Map<TopicPartition, Long> until) {
        for (Map.Entry<TopicPartition, Long> e : until.entrySet()) {
            if (consumer.position(e.getKey()) < e.getValue()) {
                return false;
            }
        }
        return true;
    }

    // --- admin ----------------------------------------------------------------------------------

    interface Step {
        void run() throws Exception;
    }

    /** Run one admin step; an exception becomes an {"event": "admin", "step": .., "error": ..}
     *  line, so the test sees every step that failed and the ones after it still run. */
    static void step(String name, Step body) {
        try {
            body.run();
        } catch (Exception e) {
            Throwable cause = e instanceof java.util.concurrent.ExecutionException && e.getCause() != null
                    ? e.getCause() : e;
            emit("event", "admin", "step", name, "error",
                    cause.getClass().getSimpleName() + ": " + cause.getMessage());
        }
    }

    static <T> T get(org.apache.kafka.common.KafkaFuture<T> future) throws Exception {
        return future.get(CALL_TIMEOUT_S, TimeUnit.SECONDS);
    }

    static Map<String, Object> configs(Admin admin, String topic, String... names) throws Exception {
        ConfigResource resource = new ConfigResource(ConfigResource.Type.TOPIC, topic);
        Config config = get(admin.describeConfigs(List.of(resource)).all()).get(resource);
        Map<String, Object> out = new TreeMap<>();
        for (String name : names) {
            ConfigEntry entry = config.get(name);
            out.put(name, entry == null ? null
                    : Map.of("value", String.valueOf(entry.value()), "source", entry.source().name()));
        }
        out.put("_entries", config.entries().size());
        return out;
    }

    static void admin(Args a) throws Exception {
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, a.bootstrap);
        props.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "30000");
        props.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "15000");
        String topic = a.topic;
        TopicPartition p0 = new TopicPartition(topic, 0);
        try (Admin admin = Admin.create(props)) {
            step("createTopics", () -> {
                NewTopic t = new NewTopic(topic, 2, (short) 1)
                        .configs(Map.of("retention.ms", "86400000", "max.message.bytes", "500000"));
                get(admin.createTopics(List.of(t)).all());
                Set<String> names = get(admin.listTopics().names());
                emit("event", "admin", "step", "createTopics", "listed", names.contains(topic));
            });
            step("describeConfigs", () -> emit("event", "admin", "step", "describeConfigs",
                    "configs", configs(admin, topic, "retention.ms", "max.message.bytes",
                            "cleanup.policy", "segment.bytes")));
            step("produce", () -> {
                Properties pp = new Properties();
                pp.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, a.bootstrap);
                pp.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
                pp.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
                List<Object> offsets = new ArrayList<>();
                try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(pp)) {
                    for (int i = 0; i < 10; i++) {
                        RecordMetadata m = producer.send(new ProducerRecord<>(topic, 0, a.startTs + i * 1000L,
                                bytes("k" + i), bytes("v" + i))).get(MAX_WAIT_MS, TimeUnit.MILLISECONDS);
                        offsets.add(m.offset());
                    }
                }
                emit("event", "admin", "step", "produce", "offsets", offsets);
            });
            step("listOffsets", () -> {
                Map<String, Object> got = new LinkedHashMap<>();
                Map<String, OffsetSpec> specs = new LinkedHashMap<>();
                specs.put("earliest", OffsetSpec.earliest());
                specs.put("latest", OffsetSpec.latest());
                specs.put("max_timestamp", OffsetSpec.maxTimestamp());
                specs.put("for_timestamp", OffsetSpec.forTimestamp(a.startTs + 4000L));
                for (Map.Entry<String, OffsetSpec> e : specs.entrySet()) {
                    ListOffsetsResult.ListOffsetsResultInfo info =
                            get(admin.listOffsets(Map.of(p0, e.getValue())).partitionResult(p0));
                    got.put(e.getKey(), Map.of("offset", info.offset(), "timestamp", info.timestamp()));
                }
                emit("event", "admin", "step", "listOffsets", "partition0", got);
            });
            step("deleteRecords", () -> {
                DeletedRecords deleted = get(admin.deleteRecords(
                        Map.of(p0, RecordsToDelete.beforeOffset(5))).lowWatermarks().get(p0));
                long earliest = get(admin.listOffsets(Map.of(p0, OffsetSpec.earliest()))
                        .partitionResult(p0)).offset();
                emit("event", "admin", "step", "deleteRecords", "low_watermark", deleted.lowWatermark(),
                        "earliest_after", earliest);
            });
            step("incrementalAlterConfigs", () -> {
                ConfigResource resource = new ConfigResource(ConfigResource.Type.TOPIC, topic);
                List<AlterConfigOp> ops = List.of(
                        new AlterConfigOp(new ConfigEntry("retention.ms", "3600000"), AlterConfigOp.OpType.SET),
                        new AlterConfigOp(new ConfigEntry("max.message.bytes", ""), AlterConfigOp.OpType.DELETE),
                        new AlterConfigOp(new ConfigEntry("cleanup.policy", "compact"), AlterConfigOp.OpType.APPEND));
                get(admin.incrementalAlterConfigs(Map.of(resource, ops)).all());
                emit("event", "admin", "step", "incrementalAlterConfigs", "configs",
                        configs(admin, topic, "retention.ms", "max.message.bytes", "cleanup.policy"));
            });
            step("createPartitions", () -> {
                get(admin.createPartitions(Map.of(topic, NewPartitions.increaseTo(4))).all());
                TopicDescription d = get(admin.describeTopics(List.of(topic)).allTopicNames()).get(topic);
                List<Object> leaders = new ArrayList<>();
                d.partitions().forEach(p -> leaders.add(p.leader() == null ? null : p.leader().id()));
                emit("event", "admin", "step", "createPartitions", "partitions", d.partitions().size(),
                        "leaders", leaders, "topic_id", d.topicId().toString());
            });
            step("describeCluster", () -> {
                DescribeClusterResult c = admin.describeCluster();
                List<Object> nodes = new ArrayList<>();
                for (Node n : get(c.nodes())) {
                    nodes.add(Map.of("id", n.id(), "host", n.host(), "port", n.port()));
                }
                Node controller = get(c.controller());
                emit("event", "admin", "step", "describeCluster", "cluster_id", get(c.clusterId()),
                        "nodes", nodes, "controller", controller == null ? null : controller.id());
            });
            step("describeLogDirs", () -> {
                List<Integer> ids = new ArrayList<>();
                for (Node n : get(admin.describeCluster().nodes())) {
                    ids.add(n.id());
                }
                Map<Integer, Map<String, LogDirDescription>> dirs =
                        get(admin.describeLogDirs(ids).allDescriptions());
                Map<String, Object> partitions = new TreeMap<>();
                int count = 0;
                for (Map<String, LogDirDescription> byDir : dirs.values()) {
                    for (LogDirDescription d : byDir.values()) {
                        count++;
                        for (Map.Entry<TopicPartition, ReplicaInfo> r : d.replicaInfos().entrySet()) {
                            if (r.getKey().topic().equals(topic)) {
                                partitions.put(String.valueOf(r.getKey().partition()), r.getValue().size());
                            }
                        }
                    }
                }
                emit("event", "admin", "step", "describeLogDirs", "brokers", ids, "log_dirs", count,
                        "sizes", partitions);
            });
            step("deleteTopics", () -> {
                get(admin.deleteTopics(List.of(topic)).all());
                Set<String> names = get(admin.listTopics().names());
                emit("event", "admin", "step", "deleteTopics", "listed", names.contains(topic));
            });
        }
    }

    // --- main -------------------------------------------------------------------------------------

    public static void main(String[] argv) throws Exception {
        List<List<String>> runs = new ArrayList<>();
        runs.add(new ArrayList<>());
        for (String arg : argv) {
            if (arg.equals("--")) {
                runs.add(new ArrayList<>());
            } else {
                runs.get(runs.size() - 1).add(arg);
            }
        }
        for (List<String> run : runs) {
            if (run.isEmpty()) {
                throw new IllegalArgumentException("usage: ClientDriver <scenario> --bootstrap B --topic T ... [-- ...]");
            }
            Args a = Args.parse(run);
            scenario = a.scenario;
            switch (a.scenario) {
                case "produce-consume" -> produceConsume(a);
                case "admin" -> admin(a);
                default -> throw new IllegalArgumentException("unknown scenario " + a.scenario);
            }
        }
    }
}
