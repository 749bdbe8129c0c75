package dev.kvpool.operator.model;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kvpool.operator.crd.KVPool;
import dev.kvpool.operator.crd.KVPoolSpec;
import io.fabric8.kubernetes.api.model.HasMetadata;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** Every object of a KVPool, with default and with custom settings. */
class PoolModelTest {

    static List<String> kindsAndNames(KVPool p) {
        return PoolModel.of(p).desired().stream().map(o -> o.getKind() + "/" + o.getMetadata().getName()).toList();
    }

    @Test
    void defaultsGiveThePlanesTheAgentsThePoliciesAndTheDashboard() {
        assertEquals(List.of(
                "Deployment/prod-control-plane", "Service/prod-control-plane",
                "Deployment/prod-metadata-plane", "Service/prod-metadata-plane", "PodDisruptionBudget/prod-metadata-plane",
                "DaemonSet/prod-data-agent", "Service/prod-data-agent",
                "NetworkPolicy/prod-default-deny", "NetworkPolicy/prod-control-plane",
                "NetworkPolicy/prod-metadata-plane", "NetworkPolicy/prod-data-agent",
                "ConfigMap/prod-dashboard"), kindsAndNames(DataAgentModelTest.pool()));
    }

    @Test
    void settingsAddAndRemoveObjects() {
        KVPool p = MonitoringModelTest.monitored();
        p.getSpec().dataAgent.enabled = false;
        p.getSpec().network = new KVPoolSpec.Network();
        p.getSpec().network.policies = false;
        assertEquals(List.of(
                "Deployment/prod-control-plane", "Service/prod-control-plane",
                "Deployment/prod-metadata-plane", "Service/prod-metadata-plane", "PodDisruptionBudget/prod-metadata-plane",
                "ServiceMonitor/prod-monitoring", "PrometheusRule/prod-monitoring", "ConfigMap/prod-dashboard"),
                kindsAndNames(p));
    }

    @Test
    void everyObjectIsInThePoolsNamespaceOwnedByItAndUnique() {
        List<HasMetadata> all = PoolModel.of(MonitoringModelTest.monitored()).desired();
        Set<String> seen = new HashSet<>();
        for (HasMetadata o : all) {
            assertEquals("llm", o.getMetadata().getNamespace(), o.getMetadata().getName());
            assertEquals("prod", o.getMetadata().getOwnerReferences().getFirst().getName());
            assertEquals("prod", o.getMetadata().getLabels().get("app.kubernetes.io/instance"));
            assertTrue(seen.add(o.getKind() + "/" + o.getMetadata().getName()), "duplicate " + o.getMetadata().getName());
        }
    }
}
