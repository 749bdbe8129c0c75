package dev.kvpool.operator.model;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.kvpool.operator.crd.KVPool;
import dev.kvpool.operator.crd.KVPoolSpec;
import io.fabric8.kubernetes.api.model.ConfigMap;
import io.fabric8.kubernetes.api.model.ConfigMapBuilder;
import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.IntOrString;
import io.fabric8.kubernetes.api.model.ObjectMeta;
import io.fabric8.kubernetes.api.model.ObjectMetaBuilder;
import io.fabric8.openshift.api.model.monitoring.v1.Endpoint;
import io.fabric8.openshift.api.model.monitoring.v1.EndpointBuilder;
import io.fabric8.openshift.api.model.monitoring.v1.PrometheusRule;
import io.fabric8.openshift.api.model.monitoring.v1.PrometheusRuleBuilder;
import io.fabric8.openshift.api.model.monitoring.v1.Rule;
import io.fabric8.openshift.api.model.monitoring.v1.RuleBuilder;
import io.fabric8.openshift.api.model.monitoring.v1.ServiceMonitor;
import io.fabric8.openshift.api.model.monitoring.v1.ServiceMonitorBuilder;
import io.fabric8.kubernetes.client.utils.Serialization;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * The desired monitoring objects of a {@link KVPool}: a ServiceMonitor and a PrometheusRule (monitoring.coreos.com/v1,
 * built with fabric8's typed model, returned as generic resources) and a ConfigMap with the Grafana dashboard, as plain fabric8 objects. Pure, like
 * {@link ControlPlaneModel}. The ServiceMonitor and the PrometheusRule are off unless asked for: applying them fails
 * on a cluster without the prometheus-operator CRDs. The dashboard ConfigMap is on: every cluster takes a ConfigMap,
 * and Grafana's sidecar loads those labelled {@code grafana_dashboard: "1"}.
 *
 * <p>Prometheus labels the scraped series with {@code namespace} and {@code job} (the Service's name, since the
 * ServiceMonitor sets no jobLabel), so every expression here is scoped to one pool by
 * {@code namespace="<ns>", job="<pool>-<component>"}. The metric names are the services' Micrometer meters as the
 * Prometheus registry writes them ({@code MonitoringModelTest} checks each against the services' sources); what
 * each alert means and what to do is in {@code k8s/alerts.md}.
 */
public final class MonitoringModel extends ComponentModel {
    public static final String COMPONENT = "monitoring";
    public static final String METRICS_PATH = "/q/metrics";
    public static final String DASHBOARD_RESOURCE = "/grafana/kvpool.json";
    public static final String DASHBOARD_KEY = "kvpool.json";
    /** A group's usage against its enforced capacity (quota × hard water level) that counts as "at the hard level". */
    public static final double HARD_LEVEL_RATIO = 0.98;
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Pattern LABEL_KEY = Pattern.compile("^([a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$");
    private static final Pattern LABEL_VALUE = Pattern.compile("^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$");

    private final KVPoolSpec.Monitoring spec;

    private MonitoringModel(KVPool pool) {
        super(pool, COMPONENT);
        this.spec = pool.getSpec().monitoring == null ? new KVPoolSpec.Monitoring() : pool.getSpec().monitoring;
        if (spec.interval != null && !spec.interval.matches("^[1-9][0-9]{0,3}(s|m)$")) {
            throw new IllegalArgumentException("spec.monitoring.interval: '" + spec.interval
                    + "' is not a duration such as 30s or 1m");
        }
        if (spec.labels != null) {
            if (spec.labels.size() > 32) {
                throw new IllegalArgumentException("spec.monitoring.labels: at most 32, got " + spec.labels.size());
            }
            spec.labels.forEach((k, v) -> {
                if (k == null || !LABEL_KEY.matcher(k).matches() || v == null || !LABEL_VALUE.matcher(v).matches()) {
                    throw new IllegalArgumentException("spec.monitoring.labels: '" + k + "': '" + v
                            + "' is not a Kubernetes label");
                }
            });
        }
    }

    public static MonitoringModel of(KVPool pool) {
        return new MonitoringModel(pool);
    }

    public boolean serviceMonitorEnabled() {
        return Boolean.TRUE.equals(spec.serviceMonitor);
    }

    public boolean prometheusRuleEnabled() {
        return Boolean.TRUE.equals(spec.prometheusRule);
    }

    public boolean dashboardEnabled() {
        return !Boolean.FALSE.equals(spec.dashboard);
    }

    /**
     * Scrapes /q/metrics of the control plane and metadata plane (port {@code http}) and of the agents (port
     * {@code metrics}); a Service without the port is skipped for that endpoint.
     */
    public GenericKubernetesResource serviceMonitor() {
        return generic(typedServiceMonitor());
    }

    ServiceMonitor typedServiceMonitor() {
        String interval = spec.interval == null ? "30s" : spec.interval;
        List<Endpoint> endpoints = List.of(
                new EndpointBuilder().withPort("http").withPath(METRICS_PATH).withInterval(interval).build(),
                new EndpointBuilder().withPort("metrics").withPath(METRICS_PATH).withInterval(interval).build());
        return new ServiceMonitorBuilder()
                .withMetadata(meta(name(), true))
                .withNewSpec()
                    .withNewSelector()
                        .addToMatchLabels("app.kubernetes.io/instance", pool.getMetadata().getName())
                        .addToMatchLabels("app.kubernetes.io/part-of", "kvpool")
                        // the managed engines may share the instance label; only the three services
                        .addNewMatchExpression().withKey("app.kubernetes.io/component").withOperator("In")
                            .withValues(ControlPlaneModel.COMPONENT, MetadataPlaneModel.COMPONENT, DataAgentModel.COMPONENT)
                        .endMatchExpression()
                    .endSelector()
                    .withEndpoints(endpoints)
                .endSpec()
                .build();
    }

    public GenericKubernetesResource prometheusRule() {
        return generic(typedPrometheusRule());
    }

    PrometheusRule typedPrometheusRule() {
        return new PrometheusRuleBuilder()
                .withMetadata(meta(name(), true))
                .withNewSpec()
                    .addNewGroup().withName("kvpool." + pool.getMetadata().getName()).withRules(rules()).endGroup()
                .endSpec()
                .build();
    }

    /**
     * Built with fabric8's typed model (its builders check the field names), handed on as generic resources: the
     * reconciler reports a missing prometheus-operator CRD for generic resources by name.
     */
    private static GenericKubernetesResource generic(HasMetadata typed) {
        return Serialization.jsonMapper().convertValue(typed, GenericKubernetesResource.class);
    }

    /** The job and namespace of one component's series. */
    String scope(String component) {
        return "namespace=\"" + pool.getMetadata().getNamespace() + "\",job=\"" + pool.getMetadata().getName() + "-"
                + component + "\"";
    }

    List<Rule> rules() {
        String meta = scope(MetadataPlaneModel.COMPONENT);
        String agent = scope(DataAgentModel.COMPONENT);
        String control = scope(ControlPlaneModel.COMPONENT);
        String jobs = "namespace=\"" + pool.getMetadata().getNamespace() + "\",job=~\"" + pool.getMetadata().getName()
                + "-(" + ControlPlaneModel.COMPONENT + "|" + MetadataPlaneModel.COMPONENT + "|" + DataAgentModel.COMPONENT + ")\"";
        return List.of(
                rule("KVPoolGroupAtHardWaterLevel",
                        "max by (group) (kvpool_meta_group_used_bytes{" + meta + "} / (kvpool_meta_group_quota_bytes{"
                                + meta + "} > 0)) >= " + HARD_LEVEL_RATIO,
                        "10m", "warning",
                        "Instance group {{ $labels.group }} is at its hard water level",
                        "Group {{ $labels.group }} has used {{ $value | humanizePercentage }} of its enforced capacity"
                                + " (quota x hard water level) for 10 minutes: new blocks are refused."),
                rule("KVPoolReclaimLagging",
                        "max(kvpool_meta_reclaim_lag_seconds{" + meta + "}) > 600",
                        "5m", "warning",
                        "Reclaim is not bringing a group back under its water level",
                        "A group has been over its soft water level for {{ $value | humanizeDuration }}."),
                rule("KVPoolNoMetadataPlaneLeader",
                        "(sum(kvpool_meta_leader{" + meta + "}) or vector(0)) < 1",
                        "2m", "critical",
                        "No metadata-plane replica is the leader",
                        "No replica runs the background work (reclaim, expiry of write sessions)."),
                rule("KVPoolSeveralMetadataPlaneLeaders",
                        "sum(kvpool_meta_leader{" + meta + "}) > 1",
                        "5m", "critical",
                        "More than one metadata-plane replica claims leadership",
                        "{{ $value }} replicas run the background work at once."),
                rule("KVPoolMetadataEventsDropped",
                        "sum(increase(kvpool_meta_events_dropped{" + meta + "}[10m])) > 0",
                        "0m", "warning",
                        "The metadata plane dropped kvpool.cache events",
                        "{{ $value }} events were dropped in 10 minutes because the queue to Kafka was full."),
                rule("KVPoolAgentEventsDropped",
                        "sum by (pod) (increase(kvpool_agent_events_dropped_batches_total{" + agent + "}[10m])) > 0",
                        "0m", "warning",
                        "Data agent {{ $labels.pod }} dropped kvpool.blocks batches",
                        "{{ $value }} batches of block events were dropped from the agent's full spool in 10 minutes."),
                rule("KVPoolQuotaRefusals",
                        "sum by (api) (rate(kvpool_meta_errors_total{" + meta
                                + ",code=\"REACH_MAX_ENTITY_CAPACITY\"}[5m])) > 0",
                        "10m", "warning",
                        "KVCM calls {{ $labels.api }} are refused for capacity",
                        "{{ $value }} refusals per second (a group quota, a storage-type quota or the instance count)."),
                rule("KVPoolMetadataPlaneNotReady",
                        "max by (pod) (kvpool_meta_ready{" + meta + "}) == 0",
                        "30m", "warning",
                        "Metadata-plane replica {{ $labels.pod }} is not serving",
                        "The replica has not finished start-up (recovery of the index) for 30 minutes."),
                rule("KVPoolTargetDown",
                        "up{" + jobs + "} == 0",
                        "5m", "critical",
                        "{{ $labels.job }} {{ $labels.pod }} cannot be scraped",
                        "Prometheus has not reached /q/metrics of {{ $labels.pod }} for 5 minutes."),
                rule("KVPoolAgentDeviceFailed",
                        "max by (pod, device) (kvpool_agent_device_failed{" + agent + "}) == 1",
                        "5m", "warning",
                        "Device {{ $labels.device }} of agent {{ $labels.pod }} is out of use",
                        "The device failed 16 operations in a row; its blocks are misses until a probe brings it back."),
                rule("KVPoolAgentChecksumFailures",
                        "sum by (pod, tier) (increase(kvpool_agent_checksum_failures_total{" + agent + "}[15m])) > 0",
                        "0m", "warning",
                        "Agent {{ $labels.pod }} read corrupted blocks from tier {{ $labels.tier }}",
                        "{{ $value }} blocks failed their CRC32C in 15 minutes; they were served as misses."),
                rule("KVPoolConfigOutboxBacklog",
                        "max(kvpool_control_outbox_pending{" + control + "}) > 100",
                        "10m", "warning",
                        "Configuration changes are not reaching Kafka",
                        "{{ $value }} changes wait in the control plane's outbox; the metadata planes do not see them."));
    }

    private static Rule rule(String alert, String expr, String forDuration, String severity, String summary,
            String description) {
        Map<String, String> annotations = new LinkedHashMap<>();
        annotations.put("summary", summary);
        annotations.put("description", description);
        annotations.put("runbook", "k8s/alerts.md, " + alert);
        RuleBuilder b = new RuleBuilder().withAlert(alert).withExpr(new IntOrString(expr))
                .withLabels(Map.of("severity", severity)).withAnnotations(annotations);
        if (!"0m".equals(forDuration)) {
            b.withFor(forDuration);
        }
        return b.build();
    }

    /** The dashboard of this pool, labelled for Grafana's sidecar. */
    public ConfigMap dashboardConfigMap() {
        ObjectMeta m = meta(pool.getMetadata().getName() + "-dashboard", false);
        m.getLabels().put("grafana_dashboard", "1");
        return new ConfigMapBuilder().withMetadata(m).addToData(DASHBOARD_KEY, dashboardJson()).build();
    }

    /**
     * The checked-in dashboard with this pool's namespace and name as its constant variables, and a uid and title of
     * its own (two pools' dashboards must not replace each other in Grafana).
     */
    String dashboardJson() {
        try (InputStream in = MonitoringModel.class.getResourceAsStream(DASHBOARD_RESOURCE)) {
            if (in == null) {
                throw new IllegalStateException(DASHBOARD_RESOURCE + " missing from the operator's class path");
            }
            ObjectNode d = (ObjectNode) JSON.readTree(in);
            String ns = pool.getMetadata().getNamespace() == null ? "default" : pool.getMetadata().getNamespace();
            String name = pool.getMetadata().getName();
            d.put("uid", "kvpool-" + sha256(ns + "/" + name).substring(0, 16));
            d.put("title", "KVPool " + ns + "/" + name);
            for (JsonNode v : (ArrayNode) d.path("templating").path("list")) {
                String value = switch (v.path("name").asText()) {
                    case "namespace" -> ns;
                    case "pool" -> name;
                    default -> null;
                };
                if (value != null) {
                    ObjectNode o = (ObjectNode) v;
                    o.put("query", value);
                    o.putObject("current").put("text", value).put("value", value);
                    o.putArray("options").addObject().put("selected", true).put("text", value).put("value", value);
                }
            }
            return JSON.writerWithDefaultPrettyPrinter().writeValueAsString(d);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static String sha256(String s) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(s.getBytes(StandardCharsets.UTF_8)));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    private ObjectMeta meta(String name, boolean extraLabels) {
        Map<String, String> l = new LinkedHashMap<>(labels());
        if (extraLabels && spec.labels != null) {
            spec.labels.forEach(l::putIfAbsent);
        }
        return new ObjectMetaBuilder()
                .withName(name)
                .withNamespace(pool.getMetadata().getNamespace())
                .withLabels(l)
                .withOwnerReferences(ownerReference())
                .build();
    }
}
