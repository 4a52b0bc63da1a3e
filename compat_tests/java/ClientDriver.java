// Java kafka-clients driver of ../SCENARIOS.md, compiled at test time against Kafka 4.4's jars
// (compat_tests/test_clients_java.py). Scenarios:
//
//   produce-consume  the producer in its DEFAULT configuration (idempotent, acks=all) with
//                    --compression, the consumer by assign + seek, offsetsForTimes for the replay;
//   acks             four producers (acks 0, 1, all, idempotent), one partition each;
//   large            a record near max.message.bytes and one over it;
//   admin            AdminClient step by step, one {"event": "admin", "step": ...} line per
//                    step with what it got (or "error"), then Java-only extra steps;
//   errors           an unknown topic and an invalid topic config, one error line each.
//
// One JVM runs several scenarios when their argument lists are separated by "--":
//   ClientDriver produce-consume --bootstrap B --topic t1 --partitions 3 -- admin --bootstrap B --topic t2
// Every line printed carries "scenario" (the scenario that printed it; produce-consume as
// "produce-consume/<codec>"). Exits non-zero, with the exception on stderr, when a scenario could
// not finish.

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;
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
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.UnknownServerException;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.protocol.Errors;
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

    // --- clients ----------------------------------------------------------------------------

    static KafkaProducer<byte[], byte[]> producer(String bootstrap, Map<String, String> overrides) {
        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        props.putAll(overrides);
        return new KafkaProducer<>(props);
    }

    static KafkaConsumer<byte[], byte[]> consumer(String bootstrap, Map<String, String> overrides) {
        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        props.put(ConsumerConfig.FETCH_MAX_WAIT_MS_CONFIG, "100");
        props.putAll(overrides);
        return new KafkaConsumer<>(props);
    }

    static List<TopicPartition> partitions(String topic, int count) {
        List<TopicPartition> out = new ArrayList<>();
        for (int p = 0; p < count; p++) {
            out.add(new TopicPartition(topic, p));
        }
        return out;
    }

    /** Assign exactly the partitions of {@code from}, seek each to its offset and hand every
     *  record below the partition's {@code ends} offset to {@code sink}, until every position
     *  reached its end (bounded by MAX_WAIT_MS). */
    static void readRange(KafkaConsumer<byte[], byte[]> consumer, Map<TopicPartition, Long> from,
            Map<TopicPartition, Long> ends, java.util.function.Consumer<ConsumerRecord<byte[], byte[]>> sink) {
        consumer.assign(from.keySet());
        from.forEach(consumer::seek);
        long deadline = System.currentTimeMillis() + MAX_WAIT_MS;
        while (!reached(consumer, from.keySet(), ends)) {
            if (System.currentTimeMillis() > deadline) {
                throw new IllegalStateException("did not read " + from + " up to " + ends);
            }
            for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(500))) {
                if (r.offset() < ends.get(new TopicPartition(r.topic(), r.partition()))) {
                    sink.accept(r);
                }
            }
        }
    }

    static boolean reached(KafkaConsumer<byte[], byte[]> consumer, Collection<TopicPartition> tps,
            Map<TopicPartition, Long> ends) {
        for (TopicPartition tp : tps) {
            if (consumer.position(tp) < ends.get(tp)) {
                return false;
            }
        }
        return true;
    }

    /** The Kafka error code an exception stands for, or null when it carries none. Java turns
     *  its own deadlines (max.block.ms, delivery.timeout.ms, default.api.timeout.ms) into a
     *  TimeoutException, also when the broker never answered with an error: that is a local
     *  timeout, not REQUEST_TIMED_OUT (which Errors.forException would map it to). */
    static Integer kafkaCode(Throwable e) {
        if (e instanceof org.apache.kafka.common.errors.TimeoutException) {
            return null;
        }
        Errors error = Errors.forException(e);
        return error == Errors.UNKNOWN_SERVER_ERROR && !(e instanceof UnknownServerException)
                ? null : (Integer) (int) error.code();
    }

    static Throwable unwrap(Throwable e) {
        while (e instanceof ExecutionException && e.getCause() != null) {
            e = e.getCause();
        }
        return e;
    }

    static void emitError(String step, Throwable e) {
        Throwable cause = unwrap(e);
        emit("event", "error", "step", step, "code", kafkaCode(cause),
                "message", cause.getClass().getSimpleName() + ": " + cause.getMessage());
    }

    // --- produce-consume ----------------------------------------------------------------------

    static void produceConsume(Args a) throws Exception {
        produce(a);
        consume(a);
    }

    static void produce(Args a) throws Exception {
        Map<String, String> config = Map.of(ProducerConfig.COMPRESSION_TYPE_CONFIG, a.compression);
        try (KafkaProducer<byte[], byte[]> producer = producer(a.bootstrap, config)) {
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
        try (KafkaConsumer<byte[], byte[]> consumer = consumer(a.bootstrap, Map.of())) {
            List<TopicPartition> all = partitions(a.topic, a.partitions);
            consumer.assign(all);
            consumer.seekToBeginning(all);
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
            Map<TopicPartition, Long> ends = consumer.endOffsets(all, Duration.ofSeconds(CALL_TIMEOUT_S));

            Map<TopicPartition, Long> fromOffset = new HashMap<>();
            for (TopicPartition tp : all) {
                if (ends.get(tp) > 1) {  // the topic is new: its partitions start at offset 0
                    fromOffset.put(tp, 1L);
                }
            }
            readRange(consumer, fromOffset, ends, r -> emitRecord("from_offset", r));

            Map<TopicPartition, Long> query = new HashMap<>();
            for (TopicPartition tp : all) {
                query.put(tp, a.threshold());
            }
            Map<TopicPartition, OffsetAndTimestamp> found =
                    consumer.offsetsForTimes(query, Duration.ofSeconds(CALL_TIMEOUT_S));
            Map<TopicPartition, Long> fromTimestamp = new HashMap<>();
            found.forEach((tp, hit) -> {
                if (hit != null) {
                    fromTimestamp.put(tp, hit.offset());
                }
            });
            readRange(consumer, fromTimestamp, ends, r -> emitRecord("from_timestamp", r));
        }
    }

    // --- acks -----------------------------------------------------------------------------------

    static void acks(Args a) throws Exception {
        String[][] producers = {
            {"acks0", "0", "false"},
            {"acks1", "1", "false"},
            {"acksall", "all", "false"},
            {"idempotent", "all", "true"},
        };
        for (int p = 0; p < producers.length; p++) {
            String name = producers[p][0];
            Map<String, String> config = Map.of(ProducerConfig.ACKS_CONFIG, producers[p][1],
                    ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, producers[p][2]);
            List<Future<RecordMetadata>> futures = new ArrayList<>();
            try (KafkaProducer<byte[], byte[]> producer = producer(a.bootstrap, config)) {
                for (int i = 0; i < 10; i++) {
                    futures.add(producer.send(new ProducerRecord<>(a.topic, p, bytes("k" + i),
                            bytes(name + "-" + i))));
                }
                producer.flush();
                for (int i = 0; i < 10; i++) {
                    RecordMetadata m = futures.get(i).get(MAX_WAIT_MS, TimeUnit.MILLISECONDS);
                    emit("event", "produced", "producer", name, "i", i, "partition", m.partition(),
                            "offset", m.hasOffset() ? m.offset() : -1L);
                }
            }
        }
        try (KafkaConsumer<byte[], byte[]> consumer = consumer(a.bootstrap, Map.of())) {
            List<TopicPartition> all = partitions(a.topic, producers.length);
            consumer.assign(all);
            consumer.seekToBeginning(all);
            int read = 0;
            long deadline = System.currentTimeMillis() + MAX_WAIT_MS;
            while (read < 10 * producers.length) {
                if (System.currentTimeMillis() > deadline) {
                    throw new IllegalStateException("read " + read + " of 40 records");
                }
                for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(500))) {
                    emit("event", "record", "partition", r.partition(), "offset", r.offset(),
                            "value", text(r.value()));
                    read++;
                }
            }
        }
    }

    // --- large ----------------------------------------------------------------------------------

    static final String FOUR_MIB = String.valueOf(4 << 20);

    static byte[] largeValue(int size) {
        byte[] value = new byte[size];
        for (int j = 0; j < size; j++) {
            value[j] = (byte) ('a' + j % 26);
        }
        return value;
    }

    static void large(Args a) throws Exception {
        Map<String, String> config = Map.of(ProducerConfig.MAX_REQUEST_SIZE_CONFIG, FOUR_MIB,
                ProducerConfig.COMPRESSION_TYPE_CONFIG, "none");
        try (KafkaProducer<byte[], byte[]> producer = producer(a.bootstrap, config)) {
            RecordMetadata m = producer.send(new ProducerRecord<>(a.topic, bytes("big"),
                    largeValue(1_000_000))).get(MAX_WAIT_MS, TimeUnit.MILLISECONDS);
            emit("event", "produced", "step", "near-limit", "partition", m.partition(),
                    "offset", m.offset());
            try {
                m = producer.send(new ProducerRecord<>(a.topic, bytes("big"),
                        largeValue(1_100_000))).get(MAX_WAIT_MS, TimeUnit.MILLISECONDS);
                emit("event", "produced", "step", "over-limit", "partition", m.partition(),
                        "offset", m.offset());
            } catch (ExecutionException e) {
                emitError("over-limit", e);
            }
        }
        Map<String, String> fetch = Map.of(ConsumerConfig.MAX_PARTITION_FETCH_BYTES_CONFIG, FOUR_MIB,
                ConsumerConfig.FETCH_MAX_BYTES_CONFIG, FOUR_MIB);
        try (KafkaConsumer<byte[], byte[]> consumer = consumer(a.bootstrap, fetch)) {
            TopicPartition p0 = new TopicPartition(a.topic, 0);
            Map<TopicPartition, Long> ends = consumer.endOffsets(List.of(p0), Duration.ofSeconds(CALL_TIMEOUT_S));
            MessageDigest sha256 = MessageDigest.getInstance("SHA-256");
            readRange(consumer, Map.of(p0, 0L), ends, r -> emit("event", "record", "offset", r.offset(),
                    "size", r.value().length, "sha256", HexFormat.of().formatHex(sha256.digest(r.value()))));
        }
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
            Throwable cause = unwrap(e);
            emit("event", "admin", "step", name, "error",
                    cause.getClass().getSimpleName() + ": " + cause.getMessage());
        }
    }

    /** Whether ListTopics names {@code topic}, polled for up to 15 s until the answer is
     *  {@code expected}: a broker applies a topic's creation or deletion from the metadata log
     *  a little after the controller acknowledged it, so Kafka may list a deleted topic once. */
    static boolean listed(Admin admin, String topic, boolean expected) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(15);
        boolean listed = get(admin.listTopics().names()).contains(topic);
        while (listed != expected && System.nanoTime() < deadline) {
            Thread.sleep(100);
            listed = get(admin.listTopics().names()).contains(topic);
        }
        return listed;
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

    static Admin adminClient(String bootstrap) {
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "30000");
        props.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "15000");
        return Admin.create(props);
    }

    static void admin(Args a) throws Exception {
        String topic = a.topic;
        TopicPartition p0 = new TopicPartition(topic, 0);
        String[] described = {"retention.ms", "max.message.bytes", "cleanup.policy"};
        try (Admin admin = adminClient(a.bootstrap)) {
            step("createTopics", () -> {
                NewTopic t = new NewTopic(topic, 3, (short) 1)
                        .configs(Map.of("retention.ms", "86400000", "max.message.bytes", "500000"));
                get(admin.createTopics(List.of(t)).all());
                emit("event", "admin", "step", "createTopics", "listed", listed(admin, topic, true));
            });
            step("describeConfigs", () -> emit("event", "admin", "step", "describeConfigs",
                    "configs", configs(admin, topic, described)));
            step("alterConfigs", () -> {
                ConfigResource resource = new ConfigResource(ConfigResource.Type.TOPIC, topic);
                List<AlterConfigOp> ops = List.of(
                        new AlterConfigOp(new ConfigEntry("retention.ms", "3600000"), AlterConfigOp.OpType.SET),
                        new AlterConfigOp(new ConfigEntry("max.message.bytes", ""), AlterConfigOp.OpType.DELETE));
                get(admin.incrementalAlterConfigs(Map.of(resource, ops)).all());
                emit("event", "admin", "step", "alterConfigs", "configs", configs(admin, topic, described));
            });
            step("createPartitions", () -> {
                get(admin.createPartitions(Map.of(topic, NewPartitions.increaseTo(4))).all());
                TopicDescription d = get(admin.describeTopics(List.of(topic)).allTopicNames()).get(topic);
                List<Object> leaders = new ArrayList<>();
                d.partitions().forEach(p -> leaders.add(p.leader() == null ? null : p.leader().id()));
                emit("event", "admin", "step", "createPartitions", "partitions", d.partitions().size(),
                        "leaders", leaders);
            });
            step("produce", () -> {
                List<Object> offsets = new ArrayList<>();
                try (KafkaProducer<byte[], byte[]> producer = producer(a.bootstrap, Map.of())) {
                    for (int i = 0; i < 10; i++) {
                        RecordMetadata m = producer.send(new ProducerRecord<>(topic, 0, a.startTs + i * 1000L,
                                null, bytes("admin-" + i))).get(MAX_WAIT_MS, TimeUnit.MILLISECONDS);
                        offsets.add(m.offset());
                    }
                }
                emit("event", "admin", "step", "produce", "offsets", offsets);
            });
            step("deleteRecords", () -> {
                DeletedRecords deleted = get(admin.deleteRecords(
                        Map.of(p0, RecordsToDelete.beforeOffset(5))).lowWatermarks().get(p0));
                long earliest = get(admin.listOffsets(Map.of(p0, OffsetSpec.earliest()))
                        .partitionResult(p0)).offset();
                emit("event", "admin", "step", "deleteRecords", "low_watermark", deleted.lowWatermark(),
                        "earliest_after", earliest);
            });
            step("listOffsets", () -> {
                // The contract's lookup, then (Java-only) the other specs: every one is a
                // ListOffsets request of its own.
                Map<String, Object> got = new LinkedHashMap<>();
                Map<String, OffsetSpec> specs = new LinkedHashMap<>();
                specs.put("for_timestamp", OffsetSpec.forTimestamp(a.startTs + 7000L));
                specs.put("earliest", OffsetSpec.earliest());
                specs.put("latest", OffsetSpec.latest());
                specs.put("max_timestamp", OffsetSpec.maxTimestamp());
                for (Map.Entry<String, OffsetSpec> e : specs.entrySet()) {
                    ListOffsetsResult.ListOffsetsResultInfo info =
                            get(admin.listOffsets(Map.of(p0, e.getValue())).partitionResult(p0));
                    got.put(e.getKey(), Map.of("offset", info.offset(), "timestamp", info.timestamp()));
                }
                emit("event", "admin", "step", "listOffsets",
                        "for_timestamp", ((Map<?, ?>) got.get("for_timestamp")).get("offset"),
                        "partition0", got);
            });
            // Java-only steps, beyond the contract.
            step("appendConfig", () -> {
                // APPEND to a key the topic does not set appends to its default.
                ConfigResource resource = new ConfigResource(ConfigResource.Type.TOPIC, topic);
                List<AlterConfigOp> ops = List.of(new AlterConfigOp(
                        new ConfigEntry("cleanup.policy", "compact"), AlterConfigOp.OpType.APPEND));
                get(admin.incrementalAlterConfigs(Map.of(resource, ops)).all());
                emit("event", "admin", "step", "appendConfig", "configs",
                        configs(admin, topic, "cleanup.policy"));
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
                emit("event", "admin", "step", "deleteTopics", "listed", listed(admin, topic, false));
            });
        }
    }

    // --- errors ---------------------------------------------------------------------------------

    static void errors(Args a) throws Exception {
        Map<String, String> config = Map.of(ProducerConfig.MAX_BLOCK_MS_CONFIG, "5000");
        try (KafkaProducer<byte[], byte[]> producer = producer(a.bootstrap, config)) {
            RecordMetadata m = producer.send(new ProducerRecord<>(a.topic + "-missing", bytes("k"),
                    bytes("v"))).get(MAX_WAIT_MS, TimeUnit.MILLISECONDS);
            throw new IllegalStateException("produced to a missing topic at " + m);
        } catch (ExecutionException | KafkaException e) {
            emitError("unknown-topic", e);
        }
        try (Admin admin = adminClient(a.bootstrap)) {
            NewTopic t = new NewTopic(a.topic + "-bad", 1, (short) 1)
                    .configs(Map.of("retention.ms", "not-a-number"));
            get(admin.createTopics(List.of(t)).all());
            throw new IllegalStateException("created " + t);
        } catch (ExecutionException e) {
            emitError("invalid-config", e);
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
            scenario = a.scenario.equals("produce-consume") ? a.scenario + "/" + a.compression : a.scenario;
            switch (a.scenario) {
                case "produce-consume" -> produceConsume(a);
                case "acks" -> acks(a);
                case "large" -> large(a);
                case "admin" -> admin(a);
                case "errors" -> errors(a);
                default -> throw new IllegalArgumentException("unknown scenario " + a.scenario);
            }
        }
    }
}
