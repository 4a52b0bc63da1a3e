// Java kafka-clients 4.4 driver of the fault-injection tests (compat_tests/test_faults_java.py).
// It drives millpond's control endpoint over HTTP itself (java.net.http, JSON by hand), to show
// a Java test needs nothing of Python's to make the broker misbehave:
//
//   FaultDriver produce --bootstrap B --control URL --topic T --partitions P --count N
//               [--rule JSON]... [--idempotence true|false] [--request-timeout-ms MS]
//       sends records "record-<i>" (i < N) to partition i % P with acks=all; once the first
//       record of each partition is acknowledged, POSTs each rule to URL/v1/faults and prints
//       {"event": "rule", "rule": <the answer>}; waits for
//       every one, prints {"event": "produced", ...} (with the client's record-retry-total and
//       connection-close-total metrics) and GET /v1/faults as "faults-after".
//   FaultDriver clock --control URL
//       freezes the clock, advances it an hour, resumes it; prints each answer.
//
// Exits non-zero, with the exception on stderr, when a call fails.

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.Metric;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public final class FaultDriver {
    static final HttpClient HTTP =
            HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();

    private FaultDriver() {}

    /** One call to the control endpoint; its body. A status other than 2xx is an error. */
    static String call(String method, String url, String body) throws Exception {
        HttpRequest.BodyPublisher publisher = body == null
                ? HttpRequest.BodyPublishers.noBody()
                : HttpRequest.BodyPublishers.ofString(body, StandardCharsets.UTF_8);
        HttpRequest request = HttpRequest.newBuilder(URI.create(url))
                .timeout(Duration.ofSeconds(30))
                .header("Content-Type", "application/json")
                .method(method, publisher)
                .build();
        HttpResponse<String> response = HTTP.send(request, HttpResponse.BodyHandlers.ofString());
        if (response.statusCode() / 100 != 2) {
            throw new IllegalStateException(
                    method + " " + url + " answered " + response.statusCode() + ": " + response.body());
        }
        return response.body().isEmpty() ? "null" : response.body();
    }

    /** One JSON line whose last field is raw JSON (an answer of the endpoint). */
    static void line(String event, String rawName, String raw) {
        System.out.println("{\"event\": \"" + event + "\", \"" + rawName + "\": " + raw + "}");
        System.out.flush();
    }

    static Map<String, String> options(String[] argv, List<String> rules) {
        Map<String, String> opts = new HashMap<>();
        for (int i = 1; i < argv.length; i += 2) {
            if (i + 1 >= argv.length) {
                throw new IllegalArgumentException("no value for " + argv[i]);
            }
            if (argv[i].equals("--rule")) {
                rules.add(argv[i + 1]);
            } else {
                opts.put(argv[i], argv[i + 1]);
            }
        }
        return opts;
    }

    static void produce(Map<String, String> o, List<String> rules) throws Exception {
        String control = o.get("--control");
        String topic = o.get("--topic");
        int partitions = Integer.parseInt(o.get("--partitions"));
        int count = Integer.parseInt(o.get("--count"));
        boolean idempotent = Boolean.parseBoolean(o.getOrDefault("--idempotence", "true"));
        String requestTimeout = o.getOrDefault("--request-timeout-ms", "3000");

        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, o.get("--bootstrap"));
        props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        props.put(ProducerConfig.ACKS_CONFIG, "all");
        props.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, String.valueOf(idempotent));
        // Short timeouts: a dropped or delayed request costs seconds, not Kafka's 30 s default.
        props.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, requestTimeout);
        props.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "45000");
        props.put(ProducerConfig.RETRY_BACKOFF_MS_CONFIG, "50");
        props.put(ProducerConfig.RETRY_BACKOFF_MAX_MS_CONFIG, "500");
        props.put(ProducerConfig.RECONNECT_BACKOFF_MS_CONFIG, "50");
        props.put(ProducerConfig.RECONNECT_BACKOFF_MAX_MS_CONFIG, "500");
        props.put(ProducerConfig.LINGER_MS_CONFIG, "5");
        if (!idempotent) {
            // Order kept without idempotence: one request in flight at a time.
            props.put(ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION, "1");
        }
        long started = System.nanoTime();
        int errors = 0;
        double retries;
        double closes;
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(props)) {
            List<Future<RecordMetadata>> sent = new ArrayList<>();
            for (int i = 0; i < count; i++) {
                if (i == partitions) {
                    // The rules apply once every partition has this producer's first record:
                    // a brand-new producer's first sequence is taken as it comes (as Kafka
                    // does), so a refused first batch overtaken by a later one in flight
                    // would leave a gap no retry can fill.
                    for (Future<RecordMetadata> first : sent) {
                        first.get();
                    }
                    for (String rule : rules) {
                        line("rule", "rule", call("POST", control + "/v1/faults", rule));
                    }
                }
                byte[] value = ("record-" + i).getBytes(StandardCharsets.UTF_8);
                sent.add(producer.send(new ProducerRecord<>(topic, i % partitions, null, value)));
            }
            for (Future<RecordMetadata> future : sent) {
                try {
                    future.get();
                } catch (ExecutionException e) {
                    if (errors++ == 0) {
                        System.err.println("first failed send: " + e.getCause());
                    }
                }
            }
            retries = metric(producer, "record-retry-total");
            closes = metric(producer, "connection-close-total");
        }
        long elapsedMs = (System.nanoTime() - started) / 1_000_000;
        System.out.println("{\"event\": \"produced\", \"count\": " + count + ", \"errors\": " + errors
                + ", \"elapsed_ms\": " + elapsedMs + ", \"record_retries\": " + retries
                + ", \"connection_closes\": " + closes + "}");
        line("faults-after", "rules", call("GET", control + "/v1/faults", null));
    }

    /** A producer-level metric of the client: what it saw of the faults. */
    static double metric(KafkaProducer<byte[], byte[]> producer, String name) {
        for (Map.Entry<MetricName, ? extends Metric> e : producer.metrics().entrySet()) {
            if (e.getKey().name().equals(name) && e.getKey().group().equals("producer-metrics")) {
                return ((Number) e.getValue().metricValue()).doubleValue();
            }
        }
        throw new IllegalStateException("no producer metric " + name);
    }

    static void clock(Map<String, String> o) throws Exception {
        String control = o.get("--control");
        line("clock", "before", call("GET", control + "/v1/clock", null));
        line("clock", "freeze", call("POST", control + "/v1/clock/freeze", null));
        line("clock", "advance", call("POST", control + "/v1/clock/advance", "{\"ms\": 3600000}"));
        line("clock", "resume", call("POST", control + "/v1/clock/resume", null));
    }

    public static void main(String[] argv) throws Exception {
        List<String> rules = new ArrayList<>();
        Map<String, String> o = options(argv, rules);
        switch (argv[0]) {
            case "produce" -> produce(o, rules);
            case "clock" -> clock(o);
            default -> throw new IllegalArgumentException("unknown command " + argv[0]);
        }
    }
}
