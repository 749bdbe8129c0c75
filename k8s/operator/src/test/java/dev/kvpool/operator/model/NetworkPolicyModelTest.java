package dev.kvpool.operator.model;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kvpool.operator.crd.KVPool;
import dev.kvpool.operator.crd.KVPoolSpec;
import io.fabric8.kubernetes.api.model.LabelSelector;
import io.fabric8.kubernetes.api.model.networking.v1.NetworkPolicy;
import io.fabric8.kubernetes.api.model.networking.v1.NetworkPolicyIngressRule;
import io.fabric8.kubernetes.api.model.networking.v1.NetworkPolicyPeer;
import io.fabric8.kubernetes.api.model.networking.v1.NetworkPolicyPeerBuilder;
import io.fabric8.kubernetes.api.model.networking.v1.NetworkPolicyPort;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/**
 * The desired NetworkPolicies, without any Kubernetes. {@link #admits} evaluates the policies the way the API
 * defines them (a pod selected by any ingress policy takes only what one of their rules allows), over the pods the
 * other models label, so the tests say who reaches what rather than restating the objects.
 */
class NetworkPolicyModelTest {

    static KVPool pool() {
        return DataAgentModelTest.pool();
    }

    /** A pod: its namespace, its namespace's labels and its own labels. */
    record Pod(String namespace, Map<String, String> namespaceLabels, Map<String, String> labels) {
    }

    static Pod poolPod(ComponentModel m) {
        return new Pod("llm", Map.of("kubernetes.io/metadata.name", "llm"), m.labels());
    }

    static Pod enginePod(String ns, Map<String, String> nsLabels) {
        Map<String, String> l = new java.util.HashMap<>(nsLabels);
        l.put("kubernetes.io/metadata.name", ns);
        return new Pod(ns, l, Map.of("app", "vllm"));
    }

    static boolean matches(LabelSelector s, Map<String, String> labels) {
        if (s == null) {
            return true;
        }
        if (s.getMatchLabels() != null && !labels.entrySet().containsAll(s.getMatchLabels().entrySet())) {
            return false;
        }
        for (var e : s.getMatchExpressions() == null ? List.<io.fabric8.kubernetes.api.model.LabelSelectorRequirement>of()
                : s.getMatchExpressions()) {
            boolean in = e.getValues().contains(labels.get(e.getKey()));
            if ("In".equals(e.getOperator()) != in) {
                return false;
            }
        }
        return true;
    }

    static boolean peerMatches(NetworkPolicyPeer peer, String policyNamespace, Pod from) {
        if (peer.getIpBlock() != null) {
            return false;
        }
        boolean nsOk = peer.getNamespaceSelector() == null ? from.namespace().equals(policyNamespace)
                : matches(peer.getNamespaceSelector(), from.namespaceLabels());
        return nsOk && matches(peer.getPodSelector(), from.labels());
    }

    static boolean portMatches(List<NetworkPolicyPort> ports, int port) {
        if (ports == null || ports.isEmpty()) {
            return true;
        }
        for (NetworkPolicyPort p : ports) {
            int lo = p.getPort().getIntVal();
            int hi = p.getEndPort() == null ? lo : p.getEndPort();
            if (port >= lo && port <= hi && "TCP".equals(p.getProtocol())) {
                return true;
            }
        }
        return false;
    }

    /** Whether {@code from} may open TCP {@code port} on {@code to} under these policies. */
    static boolean admits(List<NetworkPolicy> policies, Pod from, Pod to, int port) {
        boolean selected = false;
        for (NetworkPolicy np : policies) {
            if (!np.getMetadata().getNamespace().equals(to.namespace())
                    || !matches(np.getSpec().getPodSelector(), to.labels())
                    || !np.getSpec().getPolicyTypes().contains("Ingress")) {
                continue;
            }
            selected = true;
            for (NetworkPolicyIngressRule r : np.getSpec().getIngress()) {
                boolean fromOk = r.getFrom() == null || r.getFrom().isEmpty()
                        || r.getFrom().stream().anyMatch(p -> peerMatches(p, np.getMetadata().getNamespace(), from));
                if (fromOk && portMatches(r.getPorts(), port)) {
                    return true;
                }
            }
        }
        return !selected;
    }

    final KVPool pool = pool();
    final List<NetworkPolicy> policies = NetworkPolicyModel.of(pool).policies();
    final Pod cp = poolPod(ControlPlaneModel.of(pool));
    final Pod mp = poolPod(MetadataPlaneModel.of(pool));
    final Pod agent = poolPod(DataAgentModel.of(pool));
    final Pod engine = enginePod("inference", Map.of("kvpool.dev/pool", "prod"));
    final Pod stranger = enginePod("other", Map.of());
    final Pod sameNamespaceStranger = new Pod("llm", Map.of("kubernetes.io/metadata.name", "llm"), Map.of("app", "x"));
    final Pod operator = new Pod("kvpool-system", Map.of("kubernetes.io/metadata.name", "kvpool-system"),
            Map.of("app.kubernetes.io/name", "kvpool-operator"));
    final Pod prometheus = enginePod("monitoring", Map.of("kvpool.dev/monitoring", "true"));

    @Test
    void policiesAreNamedOwnedAndStartWithADefaultDeny() {
        assertEquals(List.of("prod-default-deny", "prod-control-plane", "prod-metadata-plane", "prod-data-agent"),
                policies.stream().map(p -> p.getMetadata().getName()).toList());
        for (NetworkPolicy p : policies) {
            assertEquals("llm", p.getMetadata().getNamespace());
            assertEquals("KVPool", p.getMetadata().getOwnerReferences().getFirst().getKind());
            assertEquals(List.of("Ingress"), p.getSpec().getPolicyTypes());
            // no rule without a peer list: that would admit every pod of the cluster
            p.getSpec().getIngress().forEach(r -> assertFalse(r.getFrom() == null || r.getFrom().isEmpty(),
                    p.getMetadata().getName()));
        }
        NetworkPolicy deny = policies.getFirst();
        assertTrue(deny.getSpec().getIngress().isEmpty());
        assertEquals(Map.of("app.kubernetes.io/instance", "prod", "app.kubernetes.io/part-of", "kvpool"),
                deny.getSpec().getPodSelector().getMatchLabels());
        for (Pod p : List.of(cp, mp, agent)) {
            assertTrue(matches(deny.getSpec().getPodSelector(), p.labels()), "every pool pod is denied by default");
        }
    }

    @Test
    void enginesReachTheMetadataPlaneAndTheAgentsOnly() {
        assertTrue(admits(policies, engine, mp, 6382));
        assertTrue(admits(policies, engine, mp, 6381));
        assertTrue(admits(policies, engine, agent, 6390));
        assertFalse(admits(policies, engine, agent, 6389), "metrics are for Prometheus");
        assertFalse(admits(policies, engine, cp, 6492));
        assertFalse(admits(policies, engine, cp, 6491));
        assertFalse(admits(policies, engine, mp, 22));
        for (Pod s : List.of(stranger, sameNamespaceStranger)) {
            assertFalse(admits(policies, s, mp, 6382));
            assertFalse(admits(policies, s, agent, 6390));
            assertFalse(admits(policies, s, cp, 6492));
        }
    }

    @Test
    void thePlanesAndAgentsReachEachOtherAsTheyMust() {
        assertTrue(admits(policies, mp, cp, 6492), "configuration from the control plane");
        assertTrue(admits(policies, agent, cp, 6492), "heartbeats");
        assertTrue(admits(policies, agent, mp, 6382), "the global pool tier");
        assertTrue(admits(policies, cp, mp, 6382), "the console's proxy");
        assertFalse(admits(policies, mp, cp, 6491));
        assertFalse(admits(policies, cp, agent, 6390));
        assertFalse(admits(policies, mp, agent, 6390));
    }

    @Test
    void controlPlaneFromTheOperatorAndAdminsOnly() {
        assertTrue(admits(policies, operator, cp, 6492));
        assertTrue(admits(policies, operator, cp, 6491));
        assertFalse(admits(policies, operator, mp, 6382));
        Pod console = enginePod("ops", Map.of("team", "platform"));
        assertFalse(admits(policies, console, cp, 6492), "no admins by default");
        KVPool p = pool();
        p.getSpec().network = new KVPoolSpec.Network();
        p.getSpec().network.adminFrom = List.of(new NetworkPolicyPeerBuilder()
                .withNewNamespaceSelector().addToMatchLabels("team", "platform").endNamespaceSelector().build());
        List<NetworkPolicy> withAdmins = NetworkPolicyModel.of(p).policies();
        assertTrue(admits(withAdmins, console, cp, 6492));
        assertTrue(admits(withAdmins, console, cp, 6491));
        assertFalse(admits(withAdmins, console, mp, 6382));
        assertTrue(admits(withAdmins, operator, cp, 6492), "the operator stays admitted");
    }

    @Test
    void prometheusReachesTheMetricsPorts() {
        assertTrue(admits(policies, prometheus, cp, 6492));
        assertTrue(admits(policies, prometheus, mp, 6382));
        assertTrue(admits(policies, prometheus, agent, 6389));
        assertFalse(admits(policies, prometheus, agent, 6390));
        assertFalse(admits(policies, prometheus, mp, 6381));
    }

    @Test
    void customEngineSelectorReplacesTheNamespaceLabel() {
        KVPool p = pool();
        p.getSpec().network = new KVPoolSpec.Network();
        p.getSpec().network.engines = List.of(new NetworkPolicyPeerBuilder()
                .withNewNamespaceSelector().endNamespaceSelector()
                .withNewPodSelector().addToMatchLabels("kvpool.dev/engine", "true").endPodSelector().build());
        List<NetworkPolicy> custom = NetworkPolicyModel.of(p).policies();
        Pod labelled = new Pod("anywhere", Map.of(), Map.of("kvpool.dev/engine", "true"));
        assertTrue(admits(custom, labelled, mp, 6382));
        assertTrue(admits(custom, labelled, agent, 6390));
        assertFalse(admits(custom, engine, mp, 6382), "the default namespace label no longer counts");
    }

    @Test
    void managedEnginesTakeClientsOnlyFromThePlanesThatUseThem() {
        KVPool p = pool();
        p.getSpec().engines.postgres.secretRef = null;
        p.getSpec().engines.postgres.managed = new KVPoolSpec.ManagedPostgres();
        p.getSpec().engines.redis.urlSecretRef = null;
        p.getSpec().engines.redis.managed = new KVPoolSpec.ManagedRedis();
        p.getSpec().engines.kafka = new KVPoolSpec.Kafka();
        p.getSpec().engines.kafka.managed = new KVPoolSpec.ManagedKafka();
        List<NetworkPolicy> all = NetworkPolicyModel.of(p).policies();
        assertEquals(List.of("prod-default-deny", "prod-control-plane", "prod-metadata-plane", "prod-data-agent",
                "prod-postgres", "prod-valkey", "prod-kafka"), all.stream().map(n -> n.getMetadata().getName()).toList());
        Pod postgres = enginePodOf("postgres");
        Pod valkey = enginePodOf("valkey");
        Pod kafka = enginePodOf("kafka");
        assertTrue(admits(all, cp, postgres, 5432));
        assertFalse(admits(all, mp, postgres, 5432));
        assertFalse(admits(all, engine, postgres, 5432));
        assertFalse(admits(all, sameNamespaceStranger, postgres, 5432));
        assertTrue(admits(all, postgres, postgres, 5432), "replication between its own instances");
        assertTrue(admits(all, stranger, postgres, 8000), "the engine operator's other ports stay open");
        assertTrue(admits(all, mp, valkey, 6379));
        assertFalse(admits(all, cp, valkey, 6379));
        assertFalse(admits(all, agent, valkey, 6379));
        for (Pod client : List.of(cp, mp, agent)) {
            assertTrue(admits(all, client, kafka, 9092));
            assertTrue(admits(all, client, kafka, 9093));
        }
        assertFalse(admits(all, engine, kafka, 9092));
        assertFalse(admits(all, stranger, kafka, 9093));
        assertTrue(admits(all, stranger, kafka, 9091), "Strimzi's own ports are its own policies' business");
        // referenced engines get no policy from the pool
        assertFalse(policies.stream().anyMatch(n -> n.getMetadata().getName().endsWith("-postgres")));
    }

    /** An engine pod labelled as its model asks CloudNativePG / Strimzi / the StatefulSet to label it. */
    Pod enginePodOf(String component) {
        KVPool p = pool();
        p.getSpec().engines.postgres.secretRef = null;
        p.getSpec().engines.postgres.managed = new KVPoolSpec.ManagedPostgres();
        p.getSpec().engines.redis.urlSecretRef = null;
        p.getSpec().engines.redis.managed = new KVPoolSpec.ManagedRedis();
        p.getSpec().engines.kafka = new KVPoolSpec.Kafka();
        p.getSpec().engines.kafka.managed = new KVPoolSpec.ManagedKafka();
        Map<String, String> labels = podLabelsOf(component, p);
        return new Pod("llm", Map.of("kubernetes.io/metadata.name", "llm"), labels);
    }

    @SuppressWarnings("unchecked")
    static Map<String, String> podLabelsOf(String component, KVPool p) {
        return switch (component) {
            case "postgres" -> (Map<String, String>) ((Map<String, Object>) ((Map<String, Object>) PostgresModel.of(p)
                    .cluster().getAdditionalProperties().get("spec")).get("inheritedMetadata")).get("labels");
            case "kafka" -> (Map<String, String>) ((Map<String, Object>) ((Map<String, Object>) ((Map<String, Object>)
                    ((Map<String, Object>) KafkaModel.of(p).nodePool().getAdditionalProperties().get("spec"))
                            .get("template")).get("pod")).get("metadata")).get("labels");
            case "valkey" -> ValkeyModel.of(p).statefulSet().getSpec().getTemplate().getMetadata().getLabels();
            default -> throw new IllegalArgumentException(component);
        };
    }

    @Test
    void otherPortsCoverEveryPortButTheExcludedOnes() {
        List<NetworkPolicyPort> other = NetworkPolicyModel.otherPorts(List.of(9093, 9092));
        Set<Integer> open = new HashSet<>();
        for (int port = 1; port <= 65535; port++) {
            if (portMatches(other, port)) {
                open.add(port);
            }
        }
        assertEquals(65533, open.size());
        assertFalse(open.contains(9092));
        assertFalse(open.contains(9093));
        assertEquals(List.of(1, 9094), other.stream().map(p -> p.getPort().getIntVal()).toList());
        assertEquals(Collections.singletonList(65535), other.subList(1, 2).stream().map(NetworkPolicyPort::getEndPort).toList());
    }

    @Test
    void noAgentPolicyWithoutAgentsAndASettingTurnsThemOff() {
        KVPool p = pool();
        p.getSpec().dataAgent.enabled = false;
        assertFalse(NetworkPolicyModel.of(p).policies().stream()
                .anyMatch(n -> n.getMetadata().getName().equals("prod-data-agent")));
        assertTrue(NetworkPolicyModel.of(pool()).enabled());
        p.getSpec().network = new KVPoolSpec.Network();
        p.getSpec().network.policies = false;
        assertFalse(NetworkPolicyModel.of(p).enabled());
        assertFalse(PoolModel.of(p).desired().stream().anyMatch(o -> o instanceof NetworkPolicy));
    }

    @Test
    void peerListsAreBounded() {
        KVPool p = pool();
        p.getSpec().network = new KVPoolSpec.Network();
        List<NetworkPolicyPeer> many = new ArrayList<>();
        for (int i = 0; i < 17; i++) {
            many.add(new NetworkPolicyPeerBuilder().withNewPodSelector().addToMatchLabels("i", "" + i).endPodSelector()
                    .build());
        }
        p.getSpec().network.adminFrom = many;
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> NetworkPolicyModel.of(p));
        assertTrue(e.getMessage().contains("spec.network.adminFrom"), e.getMessage());
    }

    @Test
    void isDeterministic() {
        assertEquals(NetworkPolicyModel.of(pool()).policies(), NetworkPolicyModel.of(pool()).policies());
        assertEquals(4, policies.stream().map(n -> n.getMetadata().getName()).collect(Collectors.toSet()).size());
    }
}
