package dev.kvpool.operator.model;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.kvpool.operator.crd.KVPool;
import dev.kvpool.operator.crd.KVPoolSpec;
import io.fabric8.kubernetes.api.model.ConfigMap;
import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.client.utils.Serialization;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.Service;
import io.fabric8.kubernetes.api.model.ServicePort;
import io.fabric8.openshift.api.model.monitoring.v1.Endpoint;
import io.fabric8.openshift.api.model.monitoring.v1.PrometheusRule;
import io.fabric8.openshift.api.model.monitoring.v1.Rule;
import io.fabric8.openshift.api.model.monitoring.v1.ServiceMonitor;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The desired monitoring objects, without any Kubernetes. The metric names in the alerts and the dashboard are checked
 * against the meters the services' sources register, named as Micrometer's Prometheus registry (simpleclient) writes
 * them: dots become underscores, counters end in {@code _total}, timers in {@code _seconds_count/_sum/_max}, gauges
 * keep their name.
 */
class MonitoringModelTest {
    static final Path ROOT = Path.of("..", ".."); // surefire runs in k8s/operator
    static final List<String> SERVICES = List.of("control-plane", "metadata-plane", "data-agent", "api");
    /** Series that come from Prometheus itself or Micrometer's JVM binders, not from KVPool's code. */
    static final Set<String> BUILT_IN = Set.of("up", "jvm_memory_used_bytes");
    static final Pattern METRIC = Pattern.compile("\\b(kvpool_[a-z0-9_]+|jvm_[a-z0-9_]+|up)\\b(?=\\s*[{\\[)]|\\s*$|\\s*[<>=!/*+-])");

    static <T> T typed(GenericKubernetesResource g, Class<T> type) {
        return Serialization.jsonMapper().convertValue(g, type);
    }

    static KVPool pool() {
        return DataAgentModelTest.pool();
    }

    static KVPool monitored() {
        KVPool p = pool();
        p.getSpec().monitoring = new KVPoolSpec.Monitoring();
        p.getSpec().monitoring.serviceMonitor = true;
        p.getSpec().monitoring.prometheusRule = true;
        return p;
    }

    /** The Prometheus names of every meter the services register. */
    static Set<String> exportedMetrics() throws IOException {
        Set<String> names = new TreeSet<>();
        Pattern counter = Pattern.compile("(?:Function)?Counter\\.builder\\(\\s*\"([a-z0-9_.]+)\"\\s*([,)+])");
        Pattern gauge = Pattern.compile("Gauge\\.builder\\(\\s*\"([a-z0-9_.]+)\"\\s*,");
        Pattern helperGauge = Pattern.compile("(?<![A-Za-z0-9_.])gauge\\(\\s*\"([a-z0-9_.]+)\"\\s*,");
        Pattern timer = Pattern.compile("Timer\\.builder\\(\\s*\"([a-z0-9_.]+)\"\\s*\\)");
        Pattern counted = Pattern.compile("counted\\([^,()]+,\\s*\"([a-z0-9_]+)\"");
        for (String service : SERVICES) {
            List<Path> sources;
            try (Stream<Path> s = Files.walk(ROOT.resolve(service).resolve("src/main/java"))) {
                sources = s.filter(f -> f.toString().endsWith(".java")).toList();
            }
            for (Path f : sources) {
                String code = Files.readString(f);
                Matcher m = counter.matcher(code);
                while (m.find()) {
                    String base = m.group(1).replace('.', '_');
                    if (m.group(2).equals("+")) {
                        // "kvpool.meta.blocks." + what: the suffixes are the literal arguments of counted(...)
                        Matcher c = counted.matcher(code);
                        while (c.find()) {
                            names.add(base + c.group(1) + "_total");
                        }
                    } else {
                        names.add(base.endsWith("_total") ? base : base + "_total");
                    }
                }
                for (Pattern p : List.of(gauge, helperGauge)) {
                    m = p.matcher(code);
                    while (m.find()) {
                        names.add(m.group(1).replace('.', '_'));
                    }
                }
                m = timer.matcher(code);
                while (m.find()) {
                    String base = m.group(1).replace('.', '_') + "_seconds";
                    names.addAll(List.of(base + "_count", base + "_sum", base + "_max"));
                }
            }
        }
        return names;
    }

    static Set<String> metricsIn(String expr) {
        Set<String> out = new HashSet<>();
        Matcher m = METRIC.matcher(expr);
        while (m.find()) {
            out.add(m.group(1));
        }
        return out;
    }

    static void assertExported(Set<String> exported, String where, String expr) {
        Set<String> used = metricsIn(expr);
        assertFalse(used.isEmpty(), where + ": no metric in " + expr);
        for (String name : used) {
            assertTrue(exported.contains(name) || BUILT_IN.contains(name),
                    where + ": " + name + " is exported by no KVPool service (" + expr + ")");
        }
    }

    @Test
    void theSourceScanFindsTheMetersItShould() throws IOException {
        Set<String> exported = exportedMetrics();
        // one of each kind of registration, so a scan that finds nothing cannot pass the checks below
        for (String n : List.of("kvpool_meta_leader", "kvpool_meta_errors_total", "kvpool_meta_requests_seconds_count",
                "kvpool_meta_blocks_hit_total", "kvpool_control_outbox_published_total",
                "kvpool_agent_events_dropped_batches_total", "kvpool_agent_device_failed")) {
            assertTrue(exported.contains(n), n + " not found in " + exported);
        }
        assertFalse(exported.contains("kvpool_meta_no_such_metric"));
        assertEquals(Set.of("kvpool_meta_group_used_bytes", "kvpool_meta_group_quota_bytes"),
                metricsIn("kvpool_meta_group_used_bytes{a=\"b\"} / (kvpool_meta_group_quota_bytes{a=\"b\"} > 0)"));
    }

    @Test
    void prometheusOperatorObjectsAreOffByDefaultTheDashboardOn() {
        List<HasMetadata> objects = PoolModel.of(pool()).desired();
        assertFalse(objects.stream().anyMatch(o -> o.getApiVersion().startsWith("monitoring.coreos.com/")),
                "a cluster without the prometheus-operator CRDs would refuse them");
        ConfigMap dashboard = (ConfigMap) objects.stream().filter(o -> o instanceof ConfigMap).findFirst().orElseThrow();
        assertEquals("prod-dashboard", dashboard.getMetadata().getName());
        List<HasMetadata> on = PoolModel.of(monitored()).desired();
        assertEquals(1, on.stream().filter(o -> o.getKind().equals("ServiceMonitor")).count());
        assertEquals(1, on.stream().filter(o -> o.getKind().equals("PrometheusRule")).count());
        // generic resources: the reconciler names a missing prometheus-operator CRD for those
        assertTrue(on.stream().filter(o -> o.getApiVersion().equals("monitoring.coreos.com/v1"))
                .allMatch(o -> o instanceof GenericKubernetesResource));
        KVPool off = pool();
        off.getSpec().monitoring = new KVPoolSpec.Monitoring();
        off.getSpec().monitoring.dashboard = false;
        assertFalse(PoolModel.of(off).desired().stream().anyMatch(o -> o instanceof ConfigMap));
    }

    @Test
    void serviceMonitorScrapesTheMetricsPortOfEachOfTheThreeServices() {
        KVPool p = monitored();
        p.getSpec().monitoring.labels = Map.of("release", "prometheus");
        p.getSpec().monitoring.interval = "15s";
        ServiceMonitor sm = typed(MonitoringModel.of(p).serviceMonitor(), ServiceMonitor.class);
        assertEquals("monitoring.coreos.com/v1", sm.getApiVersion());
        assertEquals("ServiceMonitor", sm.getKind());
        assertEquals("llm", sm.getMetadata().getNamespace());
        assertEquals("prometheus", sm.getMetadata().getLabels().get("release"));
        assertEquals("KVPool", sm.getMetadata().getOwnerReferences().getFirst().getKind());
        var selector = sm.getSpec().getSelector();
        Map<Service, Integer> expected = Map.of(
                ControlPlaneModel.of(p).service(), ControlPlaneModel.HTTP_PORT,
                MetadataPlaneModel.of(p).service(), MetadataPlaneModel.HTTP_PORT,
                DataAgentModel.of(p).service(), DataAgentModel.METRICS_PORT);
        for (var e : expected.entrySet()) {
            Service s = e.getKey();
            assertTrue(NetworkPolicyModelTest.matches(selector, s.getMetadata().getLabels()), s.getMetadata().getName());
            List<Integer> scraped = new ArrayList<>();
            for (Endpoint ep : sm.getSpec().getEndpoints()) {
                assertEquals("/q/metrics", ep.getPath());
                assertEquals("15s", ep.getInterval());
                s.getSpec().getPorts().stream().filter(sp -> sp.getName().equals(ep.getPort()))
                        .map(ServicePort::getPort).forEach(scraped::add);
            }
            assertEquals(List.of(e.getValue()), scraped, "exactly the metrics port of " + s.getMetadata().getName());
        }
        // a managed engine's Service with the pool's instance label is not scraped for /q/metrics
        assertFalse(NetworkPolicyModelTest.matches(selector, Map.of("app.kubernetes.io/instance", "prod",
                "app.kubernetes.io/part-of", "kvpool", "app.kubernetes.io/component", "postgres")));
        assertFalse(NetworkPolicyModelTest.matches(selector, Map.of("app.kubernetes.io/instance", "other",
                "app.kubernetes.io/part-of", "kvpool", "app.kubernetes.io/component", "metadata-plane")));
    }

    @Test
    void alertsCoverWhatTheIssueAsksForWithMetricsTheServicesExport() throws IOException {
        PrometheusRule rule = typed(MonitoringModel.of(monitored()).prometheusRule(), PrometheusRule.class);
        assertEquals("monitoring.coreos.com/v1", rule.getApiVersion());
        assertEquals("PrometheusRule", rule.getKind());
        List<Rule> rules = rule.getSpec().getGroups().getFirst().getRules();
        Set<String> alerts = new HashSet<>();
        rules.forEach(r -> alerts.add(r.getAlert()));
        assertTrue(alerts.containsAll(Set.of("KVPoolGroupAtHardWaterLevel", "KVPoolReclaimLagging",
                "KVPoolNoMetadataPlaneLeader", "KVPoolMetadataEventsDropped", "KVPoolAgentEventsDropped",
                "KVPoolQuotaRefusals")), alerts.toString());
        assertEquals(rules.size(), alerts.size(), "alert names are unique");
        Set<String> exported = exportedMetrics();
        String alertsDoc = Files.readString(ROOT.resolve("k8s/alerts.md"));
        for (Rule r : rules) {
            String expr = r.getExpr().getStrVal();
            assertExported(exported, r.getAlert(), expr);
            assertTrue(expr.contains("namespace=\"llm\""), r.getAlert() + " is scoped to the pool's namespace: " + expr);
            assertTrue(expr.contains("job=\"prod-") || expr.contains("job=~\"prod-("), r.getAlert() + ": " + expr);
            assertTrue(Set.of("warning", "critical").contains(r.getLabels().get("severity")), r.getAlert());
            assertFalse(r.getAnnotations().get("summary").isBlank());
            assertTrue(alertsDoc.contains("## " + r.getAlert()), r.getAlert() + " is documented in k8s/alerts.md");
            if (r.getFor() != null) {
                assertTrue(r.getFor().matches("[1-9][0-9]*m"), r.getFor());
            }
        }
        Rule hard = rules.stream().filter(r -> r.getAlert().equals("KVPoolGroupAtHardWaterLevel")).findFirst().orElseThrow();
        assertEquals("10m", hard.getFor(), "for minutes, not one scrape");
        Rule quota = rules.stream().filter(r -> r.getAlert().equals("KVPoolQuotaRefusals")).findFirst().orElseThrow();
        assertTrue(quota.getExpr().getStrVal().contains("code=\"REACH_MAX_ENTITY_CAPACITY\""));
    }

    @Test
    void anAlertOnAMetricNobodyExportsIsCaught() throws IOException {
        Set<String> exported = exportedMetrics();
        assertThrows(AssertionError.class,
                () -> assertExported(exported, "t", "max(kvpool_meta_reclaim_lag{job=\"x\"}) > 1"));
        assertThrows(AssertionError.class, () -> assertExported(exported, "t", "vector(1) > 0"));
    }

    @Test
    void dashboardIsAGrafanaDashboardOverExportedMetrics() throws IOException {
        ConfigMap cm = MonitoringModel.of(pool()).dashboardConfigMap();
        assertEquals("1", cm.getMetadata().getLabels().get("grafana_dashboard"));
        assertEquals("llm", cm.getMetadata().getNamespace());
        JsonNode d = new ObjectMapper().readTree(cm.getData().get("kvpool.json"));
        assertEquals("KVPool llm/prod", d.path("title").asText());
        String uid = d.path("uid").asText();
        assertTrue(uid.startsWith("kvpool-") && uid.length() <= 40, uid);
        KVPool other = pool();
        other.getMetadata().setName("staging");
        String otherUid = new ObjectMapper().readTree(MonitoringModel.of(other).dashboardConfigMap().getData()
                .get("kvpool.json")).path("uid").asText();
        assertNotEquals(uid, otherUid, "two pools' dashboards must not replace each other");
        assertTrue(d.path("schemaVersion").asInt() >= 30);
        Map<String, String> vars = new java.util.HashMap<>();
        d.path("templating").path("list").forEach(v -> vars.put(v.path("name").asText(),
                v.path("current").path("value").asText()));
        assertEquals("llm", vars.get("namespace"));
        assertEquals("prod", vars.get("pool"));
        assertTrue(vars.containsKey("datasource"));
        Set<String> exported = exportedMetrics();
        Set<Integer> ids = new HashSet<>();
        int queries = 0;
        for (JsonNode panel : d.path("panels")) {
            assertTrue(ids.add(panel.path("id").asInt()), "panel ids are unique");
            JsonNode pos = panel.path("gridPos");
            assertTrue(pos.has("x") && pos.has("y") && pos.has("w") && pos.has("h"), panel.toString());
            assertTrue(pos.path("x").asInt() + pos.path("w").asInt() <= 24);
            if (panel.path("type").asText().equals("row")) {
                continue;
            }
            assertTrue(Set.of("timeseries", "stat").contains(panel.path("type").asText()));
            assertFalse(panel.path("title").asText().isBlank());
            assertTrue(panel.path("targets").size() > 0, panel.path("title").asText());
            for (JsonNode t : panel.path("targets")) {
                String expr = t.path("expr").asText();
                assertExported(exported, panel.path("title").asText(), expr);
                assertTrue(expr.contains("namespace=\"$namespace\""), expr);
                queries++;
            }
        }
        assertTrue(queries >= 20, "queries: " + queries);
    }

    @Test
    void hostileSettingsAreRefused() {
        for (String interval : List.of("0s", "30", "1h", "5s; drop", "99999s")) {
            KVPool p = monitored();
            p.getSpec().monitoring.interval = interval;
            assertThrows(IllegalArgumentException.class, () -> MonitoringModel.of(p), interval);
        }
        KVPool p = monitored();
        p.getSpec().monitoring.labels = Map.of("bad key!", "x");
        assertThrows(IllegalArgumentException.class, () -> MonitoringModel.of(p));
        KVPool q = monitored();
        q.getSpec().monitoring.labels = Map.of("release", "a b");
        assertThrows(IllegalArgumentException.class, () -> MonitoringModel.of(q));
    }

    @Test
    void isDeterministic() {
        assertEquals(MonitoringModel.of(monitored()).serviceMonitor(), MonitoringModel.of(monitored()).serviceMonitor());
        assertEquals(MonitoringModel.of(monitored()).prometheusRule(), MonitoringModel.of(monitored()).prometheusRule());
        assertEquals(MonitoringModel.of(pool()).dashboardConfigMap(), MonitoringModel.of(pool()).dashboardConfigMap());
    }
}
