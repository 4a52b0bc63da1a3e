// A broker-side metrics reporter that accepts client telemetry and drops it. Kafka only
// advertises GetTelemetrySubscriptions/PushTelemetry when a reporter can receive client metrics,
// so tools/capture loads this one into the broker (metric.reporters=TelemetrySink) to record
// those two APIs.

import java.util.List;
import java.util.Map;

import org.apache.kafka.common.metrics.KafkaMetric;
import org.apache.kafka.common.metrics.MetricsReporter;
import org.apache.kafka.server.telemetry.ClientTelemetry;
import org.apache.kafka.server.telemetry.ClientTelemetryReceiver;

public final class TelemetrySink implements MetricsReporter, ClientTelemetry {
    @Override
    public void configure(Map<String, ?> configs) {
    }

    @Override
    public void init(List<KafkaMetric> metrics) {
    }

    @Override
    public void metricChange(KafkaMetric metric) {
    }

    @Override
    public void metricRemoval(KafkaMetric metric) {
    }

    @Override
    public void close() {
    }

    @Override
    public ClientTelemetryReceiver clientReceiver() {
        return (context, payload) -> { };
    }
}
