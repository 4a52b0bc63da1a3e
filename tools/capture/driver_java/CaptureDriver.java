// Java kafka-clients 4.4 driver for tools/capture: exercises as many APIs as the Java producer,
// consumers and Admin client send, so the recording proxy sees them. Every step is bounded and
// optional steps only log their failure: the point is the bytes on the wire, not the outcome.
//
// Usage: java -cp <kafka jars>:<classes dir> CaptureDriver 127.0.0.1:PORT

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.FeatureUpdate;
import org.apache.kafka.clients.admin.ListOffsetsResult;
import org.apache.kafka.clients.admin.NewPartitionReassignment;
import org.apache.kafka.clients.admin.NewPartitions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.RecordsToDelete;
import org.apache.kafka.clients.admin.ScramCredentialInfo;
import org.apache.kafka.clients.admin.ScramMechanism;
import org.apache.kafka.clients.admin.UpdateFeaturesOptions;
import org.apache.kafka.clients.admin.UserScramCredentialUpsertion;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.ElectionType;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.acl.AccessControlEntry;
import org.apache.kafka.common.acl.AccessControlEntryFilter;
import org.apache.kafka.common.acl.AclBinding;
import org.apache.kafka.common.acl.AclBindingFilter;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.acl.AclPermissionType;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.quota.ClientQuotaAlteration;
import org.apache.kafka.common.quota.ClientQuotaEntity;
import org.apache.kafka.common.quota.ClientQuotaFilter;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourcePattern;
import org.apache.kafka.common.resource.ResourcePatternFilter;
import org.apache.kafka.common.resource.ResourceType;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public final class CaptureDriver {
    static final String CODECS = "java-codecs";
    static final String TXN = "java-txn";
    static final String ADMIN = "java-admin";
    static final String GROUP = "java-group";
    static final long STEP_TIMEOUT_S = 20;
    // Clients send a batch uncompressed when compressing would not shrink it, so values repeat
    // a phrase: still small, but every codec wins on them.
    static final String FILLER = " millpond golden bytes".repeat(6);

    private final String bootstrap;

    private CaptureDriver(String bootstrap) {
        this.bootstrap = bootstrap;
    }

    interface Step {
        void run() throws Exception;
    }

    /** Runs one step; a failing step is reported and the driver goes on with the next. */
    static void step(String name, Step body) {
        long t0 = System.nanoTime();
        try {
            body.run();
            System.out.printf("ok   %-28s %5d ms%n", name, (System.nanoTime() - t0) / 1_000_000);
        } catch (Exception e) {
            Throwable c = e.getCause() != null ? e.getCause() : e;
            System.out.printf("fail %-28s %s%n", name, c);
        }
    }

    Properties base() {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("client.id", "millpond-capture-java");
        return p;
    }

    Properties producerProps(String compression) {
        Properties p = base();
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, compression);
        p.put(ProducerConfig.LINGER_MS_CONFIG, "20");
        return p;
    }

    Properties consumerProps(String group) {
        Properties p = base();
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        if (group != null) {
            p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        }
        return p;
    }

    /** Polls until `want` records arrived or the deadline passed; returns what it got. */
    static <K, V> List<ConsumerRecord<K, V>> pollFor(KafkaConsumer<K, V> c, int want, long seconds) {
        List<ConsumerRecord<K, V>> got = new ArrayList<>();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
        while (got.size() < want && System.nanoTime() < deadline) {
            for (ConsumerRecord<K, V> r : c.poll(Duration.ofMillis(200))) {
                got.add(r);
            }
        }
        return got;
    }

    void run() {
        Admin admin = Admin.create(base());
        try {
            runWith(admin);
        } finally {
            admin.close(Duration.ofSeconds(10));
        }
    }

    void runWith(Admin admin) {
        step("clientMetricsSubscription", () -> {
            // A client-metrics subscription makes clients (here and in later drivers) push
            // telemetry, so PushTelemetry is seen too.
            ConfigResource r = new ConfigResource(ConfigResource.Type.CLIENT_METRICS, "millpond-all");
            admin.incrementalAlterConfigs(Map.of(r, List.of(
                    new AlterConfigOp(new ConfigEntry("metrics", "org.apache.kafka."), AlterConfigOp.OpType.SET),
                    new AlterConfigOp(new ConfigEntry("interval.ms", "1000"), AlterConfigOp.OpType.SET))))
                .all().get(STEP_TIMEOUT_S, TimeUnit.SECONDS);
        });
        step("createTopics", () -> admin.createTopics(List.of(
                new NewTopic(CODECS, 1, (short) 1),
                new NewTopic(TXN, 1, (short) 1),
                new NewTopic(ADMIN, 2, (short) 1).configs(Map.of("retention.ms", "3600000"))))
            .all().get(STEP_TIMEOUT_S, TimeUnit.SECONDS));
        step("listTopics", () -> admin.listTopics().names().get(STEP_TIMEOUT_S, TimeUnit.SECONDS));
        step("describeTopics", () -> admin.describeTopics(List.of(CODECS, ADMIN)).allTopicNames()
            .get(STEP_TIMEOUT_S, TimeUnit.SECONDS));
        step("describeCluster", () -> admin.describeCluster().nodes().get(STEP_TIMEOUT_S, TimeUnit.SECONDS));
        step("describeFeatures", () -> admin.describeFeatures().featureMetadata()
            .get(STEP_TIMEOUT_S, TimeUnit.SECONDS));
        step("describeMetadataQuorum", () -> admin.describeMetadataQuorum().quorumInfo()
            .get(STEP_TIMEOUT_S, TimeUnit.SECONDS));

        produceEachCodec();
        transactions(admin);
        classicGroup();
        consumerProtocolGroup();
        assignedConsumer();
        shareGroup();
        adminOps(admin);
    }

    void produceEachCodec() {
        for (String codec : List.of("none", "gzip", "snappy", "lz4", "zstd")) {
            step("produce " + codec, () -> {
                // Default config: idempotent, acks=all.
                try (KafkaProducer<String, String> p = new KafkaProducer<>(producerProps(codec))) {
                    for (int i = 0; i < 3; i++) {
                        p.send(new ProducerRecord<>(CODECS, 0, "k" + i, codec + "-v" + i + FILLER));
                    }
                    p.flush();
                }
            });
        }
        step("produce auto-create", () -> {
            try (KafkaProducer<String, String> p = new KafkaProducer<>(producerProps("gzip"))) {
                p.send(new ProducerRecord<>("java-autocreated", "k", "v")).get(STEP_TIMEOUT_S, TimeUnit.SECONDS);
            }
        });
    }

    void transactions(Admin admin) {
        step("transactions", () -> {
            Properties pp = producerProps("lz4");
            pp.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, "java-txn-1");
            Properties cp = consumerProps("java-txn-group");
            try (KafkaProducer<String, String> p = new KafkaProducer<>(pp);
                 KafkaConsumer<String, String> c = new KafkaConsumer<>(cp)) {
                p.initTransactions();
                c.subscribe(List.of(CODECS));
                List<ConsumerRecord<String, String>> in = pollFor(c, 3, STEP_TIMEOUT_S);
                p.beginTransaction();
                for (int i = 0; i < 3; i++) {
                    p.send(new ProducerRecord<>(TXN, 0, "tk" + i, "committed-" + i + FILLER));
                }
                Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
                if (!in.isEmpty()) {
                    ConsumerRecord<String, String> last = in.get(in.size() - 1);
                    offsets.put(new TopicPartition(last.topic(), last.partition()),
                        new OffsetAndMetadata(last.offset() + 1));
                }
                p.sendOffsetsToTransaction(offsets, c.groupMetadata());
                p.commitTransaction();
                p.beginTransaction();
                p.send(new ProducerRecord<>(TXN, 0, "tk", "aborted"));
                p.flush();
                p.abortTransaction();
            }
        });
        step("read_committed", () -> {
            Properties cp = consumerProps("java-rc-group");
            cp.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
            try (KafkaConsumer<String, String> c = new KafkaConsumer<>(cp)) {
                c.subscribe(List.of(TXN));
                pollFor(c, 3, 10);
                c.commitSync(Duration.ofSeconds(STEP_TIMEOUT_S));
            }
        });
        step("describeProducers", () -> admin.describeProducers(List.of(new TopicPartition(TXN, 0),
                new TopicPartition(CODECS, 0))).all().get(STEP_TIMEOUT_S, TimeUnit.SECONDS));
        step("listTransactions", () -> admin.listTransactions().all().get(STEP_TIMEOUT_S, TimeUnit.SECONDS));
        step("describeTransactions", () -> admin.describeTransactions(List.of("java-txn-1")).all()
            .get(STEP_TIMEOUT_S, TimeUnit.SECONDS));
        step("fenceProducers", () -> admin.fenceProducers(List.of("java-txn-1")).all()
            .get(STEP_TIMEOUT_S, TimeUnit.SECONDS));
    }

    void classicGroup() {
        step("classic group", () -> {
            try (KafkaConsumer<String, String> c = new KafkaConsumer<>(consumerProps(GROUP))) {
                c.subscribe(List.of(CODECS));
                pollFor(c, 15, STEP_TIMEOUT_S);
                c.commitSync(Duration.ofSeconds(STEP_TIMEOUT_S));
                c.committed(Set.of(new TopicPartition(CODECS, 0)), Duration.ofSeconds(STEP_TIMEOUT_S));
                // Stay a little so heartbeats go out.
                long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(4);
                while (System.nanoTime() < until) {
                    c.poll(Duration.ofMillis(500));
                }
            }
        });
    }

    void consumerProtocolGroup() {
        step("consumer-protocol group", () -> {
            Properties cp = consumerProps("java-group-848");
            cp.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "consumer");
            try (KafkaConsumer<String, String> c = new KafkaConsumer<>(cp)) {
                c.subscribe(List.of(CODECS));
                pollFor(c, 15, STEP_TIMEOUT_S);
                c.commitSync(Duration.ofSeconds(STEP_TIMEOUT_S));
            }
        });
    }

    void assignedConsumer() {
        step("assign + offsetsForTimes", () -> {
            try (KafkaConsumer<String, String> c = new KafkaConsumer<>(consumerProps(null))) {
                TopicPartition tp = new TopicPartition(CODECS, 0);
                c.assign(List.of(tp));
                c.beginningOffsets(List.of(tp));
                c.endOffsets(List.of(tp));
                c.offsetsForTimes(Map.of(tp, System.currentTimeMillis() - 60_000));
                c.seek(tp, 1);
                pollFor(c, 3, 10);
            }
        });
    }

    void shareGroup() {
        step("share group", () -> {
            Properties cp = consumerProps("java-share");
            cp.remove(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG);
            cp.remove(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG);
            try (KafkaShareConsumer<String, String> c = new KafkaShareConsumer<>(cp)) {
                c.subscribe(List.of(CODECS));
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
                int seen = 0;
                while (seen == 0 && System.nanoTime() < deadline) {
                    ConsumerRecords<String, String> recs = c.poll(Duration.ofMillis(500));
                    for (ConsumerRecord<String, String> r : recs) {
                        c.acknowledge(r);
                        seen++;
                    }
                }
                c.commitSync(Duration.ofSeconds(STEP_TIMEOUT_S));
            }
        });
    }

    void adminOps(Admin admin) {
        ConfigResource topic = new ConfigResource(ConfigResource.Type.TOPIC, ADMIN);
        ConfigResource broker = new ConfigResource(ConfigResource.Type.BROKER, "1");
        TopicPartition a0 = new TopicPartition(ADMIN, 0);
        step("describeConfigs", () -> admin.describeConfigs(List.of(topic, broker)).all()
            .get(STEP_TIMEOUT_S, TimeUnit.SECONDS));
        step("incrementalAlterConfigs", () -> admin.incrementalAlterConfigs(Map.of(topic, List.of(
                new AlterConfigOp(new ConfigEntry("retention.ms", "7200000"), AlterConfigOp.OpType.SET),
                new AlterConfigOp(new ConfigEntry("cleanup.policy", "compact"), AlterConfigOp.OpType.APPEND))))
            .all().get(STEP_TIMEOUT_S, TimeUnit.SECONDS));
        step("listConfigResources", () -> admin.listConfigResources().all().get(STEP_TIMEOUT_S, TimeUnit.SECONDS));
        step("createPartitions", () -> admin.createPartitions(Map.of(ADMIN, NewPartitions.increaseTo(3)))
            .all().get(STEP_TIMEOUT_S, TimeUnit.SECONDS));
        step("produce admin topic", () -> {
            try (KafkaProducer<String, String> p = new KafkaProducer<>(producerProps("zstd"))) {
                for (int i = 0; i < 5; i++) {
                    p.send(new ProducerRecord<>(ADMIN, 0, "k" + i, "v" + i));
                }
                p.flush();
            }
        });
        step("listOffsets", () -> {
            Map<TopicPartition, OffsetSpec> specs = new HashMap<>();
            specs.put(a0, OffsetSpec.latest());
            specs.put(new TopicPartition(ADMIN, 1), OffsetSpec.earliest());
            specs.put(new TopicPartition(CODECS, 0), OffsetSpec.maxTimestamp());
            specs.put(new TopicPartition(TXN, 0), OffsetSpec.forTimestamp(System.currentTimeMillis() - 60_000));
            ListOffsetsResult r = admin.listOffsets(specs);
            r.all().get(STEP_TIMEOUT_S, TimeUnit.SECONDS);
        });
        step("deleteRecords", () -> admin.deleteRecords(Map.of(a0, RecordsToDelete.beforeOffset(2)))
            .all().get(STEP_TIMEOUT_S, TimeUnit.SECONDS));
        step("describeLogDirs", () -> admin.describeLogDirs(List.of(1)).allDescriptions()
            .get(STEP_TIMEOUT_S, TimeUnit.SECONDS));
        step("describeReplicaLogDirs", () -> admin.describeReplicaLogDirs(List.of(
                new org.apache.kafka.common.TopicPartitionReplica(ADMIN, 0, 1))).all()
            .get(STEP_TIMEOUT_S, TimeUnit.SECONDS));
        step("electLeaders", () -> admin.electLeaders(ElectionType.PREFERRED, Set.of(a0)).partitions()
            .get(STEP_TIMEOUT_S, TimeUnit.SECONDS));
        step("listPartitionReassignments", () -> admin.listPartitionReassignments().reassignments()
            .get(STEP_TIMEOUT_S, TimeUnit.SECONDS));
        step("alterPartitionReassignments", () -> admin.alterPartitionReassignments(Map.of(a0,
                Optional.of(new NewPartitionReassignment(List.of(1))))).all()
            .get(STEP_TIMEOUT_S, TimeUnit.SECONDS));
        step("updateFeatures validateOnly", () -> admin.updateFeatures(
                Map.of("group.version", new FeatureUpdate((short) 1, FeatureUpdate.UpgradeType.UPGRADE)),
                new UpdateFeaturesOptions().validateOnly(true)).all().get(STEP_TIMEOUT_S, TimeUnit.SECONDS));

        step("listGroups", () -> admin.listGroups().all().get(STEP_TIMEOUT_S, TimeUnit.SECONDS));
        step("describeConsumerGroups", () -> admin.describeConsumerGroups(List.of(GROUP, "java-group-848"))
            .all().get(STEP_TIMEOUT_S, TimeUnit.SECONDS));
        step("describeClassicGroups", () -> admin.describeClassicGroups(List.of(GROUP)).all()
            .get(STEP_TIMEOUT_S, TimeUnit.SECONDS));
        step("describeShareGroups", () -> admin.describeShareGroups(List.of("java-share")).all()
            .get(STEP_TIMEOUT_S, TimeUnit.SECONDS));
        step("listShareGroupOffsets", () -> admin.listShareGroupOffsets(Map.of("java-share",
                new org.apache.kafka.clients.admin.ListShareGroupOffsetsSpec())).all()
            .get(STEP_TIMEOUT_S, TimeUnit.SECONDS));
        step("listConsumerGroupOffsets", () -> admin.listConsumerGroupOffsets(GROUP)
            .partitionsToOffsetAndMetadata().get(STEP_TIMEOUT_S, TimeUnit.SECONDS));
        step("alterConsumerGroupOffsets", () -> admin.alterConsumerGroupOffsets(GROUP,
                Map.of(new TopicPartition(CODECS, 0), new OffsetAndMetadata(1))).all()
            .get(STEP_TIMEOUT_S, TimeUnit.SECONDS));
        step("deleteConsumerGroupOffsets", () -> admin.deleteConsumerGroupOffsets(GROUP,
                Set.of(new TopicPartition(CODECS, 0))).all().get(STEP_TIMEOUT_S, TimeUnit.SECONDS));
        step("deleteConsumerGroups", () -> admin.deleteConsumerGroups(List.of(GROUP)).all()
            .get(STEP_TIMEOUT_S, TimeUnit.SECONDS));
        step("deleteShareGroups", () -> admin.deleteShareGroups(List.of("java-share")).all()
            .get(STEP_TIMEOUT_S, TimeUnit.SECONDS));

        ClientQuotaEntity entity = new ClientQuotaEntity(Map.of(ClientQuotaEntity.CLIENT_ID, "millpond-slow"));
        step("alterClientQuotas", () -> admin.alterClientQuotas(List.of(new ClientQuotaAlteration(entity,
                List.of(new ClientQuotaAlteration.Op("producer_byte_rate", 1048576.0)))))
            .all().get(STEP_TIMEOUT_S, TimeUnit.SECONDS));
        step("describeClientQuotas", () -> admin.describeClientQuotas(ClientQuotaFilter.all()).entities()
            .get(STEP_TIMEOUT_S, TimeUnit.SECONDS));
        step("alterUserScramCredentials", () -> admin.alterUserScramCredentials(List.of(
                new UserScramCredentialUpsertion("alice",
                    new ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096), "alice-secret")))
            .all().get(STEP_TIMEOUT_S, TimeUnit.SECONDS));
        step("describeUserScramCredentials", () -> admin.describeUserScramCredentials().all()
            .get(STEP_TIMEOUT_S, TimeUnit.SECONDS));

        AclBinding acl = new AclBinding(new ResourcePattern(ResourceType.TOPIC, ADMIN, PatternType.LITERAL),
            new AccessControlEntry("User:alice", "*", AclOperation.READ, AclPermissionType.ALLOW));
        step("createAcls", () -> admin.createAcls(List.of(acl)).all().get(STEP_TIMEOUT_S, TimeUnit.SECONDS));
        step("describeAcls", () -> admin.describeAcls(AclBindingFilter.ANY).values()
            .get(STEP_TIMEOUT_S, TimeUnit.SECONDS));
        step("deleteAcls", () -> admin.deleteAcls(List.of(new AclBindingFilter(
                new ResourcePatternFilter(ResourceType.TOPIC, ADMIN, PatternType.LITERAL),
                AccessControlEntryFilter.ANY))).all().get(STEP_TIMEOUT_S, TimeUnit.SECONDS));

        step("deleteTopics", () -> admin.deleteTopics(List.of(ADMIN, "java-autocreated")).all()
            .get(STEP_TIMEOUT_S, TimeUnit.SECONDS));
    }

    public static void main(String[] args) {
        if (args.length != 1) {
            System.err.println("usage: CaptureDriver BOOTSTRAP");
            System.exit(2);
        }
        new CaptureDriver(args[0]).run();
        System.out.println("java driver done");
    }
}
