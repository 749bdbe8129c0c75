package dev.kvpool.operator.model;

import dev.kvpool.operator.crd.KVPool;
import dev.kvpool.operator.crd.KVPoolSpec;
import io.fabric8.kubernetes.api.model.IntOrString;
import io.fabric8.kubernetes.api.model.LabelSelector;
import io.fabric8.kubernetes.api.model.LabelSelectorBuilder;
import io.fabric8.kubernetes.api.model.ObjectMetaBuilder;
import io.fabric8.kubernetes.api.model.networking.v1.NetworkPolicy;
import io.fabric8.kubernetes.api.model.networking.v1.NetworkPolicyBuilder;
import io.fabric8.kubernetes.api.model.networking.v1.NetworkPolicyIngressRule;
import io.fabric8.kubernetes.api.model.networking.v1.NetworkPolicyIngressRuleBuilder;
import io.fabric8.kubernetes.api.model.networking.v1.NetworkPolicyPeer;
import io.fabric8.kubernetes.api.model.networking.v1.NetworkPolicyPeerBuilder;
import io.fabric8.kubernetes.api.model.networking.v1.NetworkPolicyPort;
import io.fabric8.kubernetes.api.model.networking.v1.NetworkPolicyPortBuilder;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The desired NetworkPolicies of a {@link KVPool}, as plain fabric8 objects. Pure, like {@link ControlPlaneModel}.
 *
 * <p>One policy denies all ingress to the pool's pods ({@code app.kubernetes.io/instance=<pool>},
 * {@code part-of=kvpool}); one per component then allows exactly what it serves: the engines reach the metadata
 * plane (6382, 6381) and the data agents (6390); the metadata planes and agents reach the control plane (6492:
 * configuration, heartbeats), which reaches the metadata plane (its console's proxy); the operator and
 * {@code adminFrom} reach the control plane (6492, admin gRPC 6491); {@code monitoringFrom} reaches the metrics
 * ports. NetworkPolicies are additive: these only narrow what reaches the pool's pods. Kubelet probes come from the
 * node, which the common CNIs (Calico, Cilium) always admit.
 *
 * <p>Managed engines get one policy each, on pods {@code app.kubernetes.io/instance=<pool>} with component
 * {@code postgres}, {@code kafka} or {@code valkey}: their client ports only from the planes that use them (and from
 * their own replicas), every other port left open, because the engines' own operators (CloudNativePG's instance
 * manager on 8000, Strimzi's on the replication ports) must still reach them. Strimzi writes its own NetworkPolicies
 * that open its listeners to every pod unless the listener names {@code networkPolicyPeers}; policies add up, so the
 * Kafka resource must name the planes there too for the restriction to hold.
 */
public final class NetworkPolicyModel extends ComponentModel {
    public static final String COMPONENT = "network";
    /** Engines' namespaces carry this label with the pool's name unless spec.network.engines says otherwise. */
    public static final String ENGINE_NAMESPACE_LABEL = "kvpool.dev/pool";
    public static final String MONITORING_NAMESPACE_LABEL = "kvpool.dev/monitoring";
    public static final String OPERATOR_NAMESPACE = "kvpool-system";
    public static final String OPERATOR_NAME = "kvpool-operator";
    public static final int POSTGRES_PORT = 5432;
    public static final int VALKEY_PORT = 6379;
    /** Strimzi's plain and TLS client listeners (9090/9091 are its replication and control ports). */
    public static final List<Integer> KAFKA_PORTS = List.of(9092, 9093);

    private final KVPoolSpec.Network spec;

    private NetworkPolicyModel(KVPool pool) {
        super(pool, COMPONENT);
        this.spec = pool.getSpec().network == null ? new KVPoolSpec.Network() : pool.getSpec().network;
        for (var e : Map.of("engines", list(spec.engines), "adminFrom", list(spec.adminFrom),
                "operatorFrom", list(spec.operatorFrom), "monitoringFrom", list(spec.monitoringFrom)).entrySet()) {
            if (e.getValue().size() > 16) {
                throw new IllegalArgumentException("spec.network." + e.getKey() + ": at most 16 peers, got "
                        + e.getValue().size());
            }
            if (e.getValue().stream().anyMatch(java.util.Objects::isNull)) {
                throw new IllegalArgumentException("spec.network." + e.getKey() + ": a null peer");
            }
        }
    }

    public static NetworkPolicyModel of(KVPool pool) {
        return new NetworkPolicyModel(pool);
    }

    public boolean enabled() {
        return !Boolean.FALSE.equals(spec.policies);
    }

    /** Every policy, the default deny first. */
    public List<NetworkPolicy> policies() {
        List<NetworkPolicy> out = new ArrayList<>();
        out.add(defaultDeny());
        out.add(controlPlane());
        out.add(metadataPlane());
        if (DataAgentModel.of(pool).enabled()) {
            out.add(dataAgent());
        }
        KVPoolSpec.Engines e = pool.getSpec().engines;
        if (e != null && e.postgres != null && e.postgres.managed != null) {
            out.add(engine("postgres", List.of(POSTGRES_PORT), List.of(ControlPlaneModel.COMPONENT)));
        }
        if (e != null && e.redis != null && e.redis.managed != null) {
            out.add(engine("valkey", List.of(VALKEY_PORT), List.of(MetadataPlaneModel.COMPONENT)));
        }
        if (e != null && e.kafka != null && e.kafka.managed != null) {
            // the control plane publishes kvpool.config, the metadata plane kvpool.cache, the agents kvpool.blocks
            out.add(engine("kafka", KAFKA_PORTS, List.of(ControlPlaneModel.COMPONENT, MetadataPlaneModel.COMPONENT,
                    DataAgentModel.COMPONENT)));
        }
        return out;
    }

    /** All ingress to the pool's own pods is refused unless another policy allows it. */
    public NetworkPolicy defaultDeny() {
        Map<String, String> pods = new LinkedHashMap<>();
        pods.put("app.kubernetes.io/instance", pool.getMetadata().getName());
        pods.put("app.kubernetes.io/part-of", "kvpool");
        return new NetworkPolicyBuilder()
                .withMetadata(meta("default-deny"))
                .withNewSpec()
                    .withNewPodSelector().withMatchLabels(pods).endPodSelector()
                    .withPolicyTypes("Ingress")
                .endSpec()
                .build();
    }

    public NetworkPolicy controlPlane() {
        List<NetworkPolicyPeer> admins = new ArrayList<>(operatorPeers());
        admins.addAll(list(spec.adminFrom));
        return allow(ControlPlaneModel.COMPONENT, List.of(
                rule(admins, ports(ControlPlaneModel.HTTP_PORT, ControlPlaneModel.GRPC_PORT)),
                rule(List.of(component(MetadataPlaneModel.COMPONENT), component(DataAgentModel.COMPONENT)),
                        ports(ControlPlaneModel.HTTP_PORT)),
                rule(monitoringPeers(), ports(ControlPlaneModel.HTTP_PORT))));
    }

    public NetworkPolicy metadataPlane() {
        List<NetworkPolicyPeer> clients = new ArrayList<>(enginePeers());
        clients.add(component(DataAgentModel.COMPONENT)); // the global pool tier
        clients.add(component(ControlPlaneModel.COMPONENT)); // the console's proxy to the KVCM API
        return allow(MetadataPlaneModel.COMPONENT, List.of(
                rule(clients, ports(MetadataPlaneModel.HTTP_PORT, MetadataPlaneModel.GRPC_PORT)),
                rule(monitoringPeers(), ports(MetadataPlaneModel.HTTP_PORT))));
    }

    public NetworkPolicy dataAgent() {
        return allow(DataAgentModel.COMPONENT, List.of(
                rule(enginePeers(), ports(DataAgentModel.HTTP_PORT)),
                rule(monitoringPeers(), ports(DataAgentModel.METRICS_PORT))));
    }

    /** A managed engine: its client ports from the named planes and its own replicas; other ports stay open. */
    NetworkPolicy engine(String engine, List<Integer> clientPorts, List<String> clients) {
        List<NetworkPolicyPeer> peers = new ArrayList<>();
        for (String c : clients) {
            peers.add(component(c));
        }
        peers.add(component(engine));
        List<NetworkPolicyIngressRule> rules = new ArrayList<>();
        rules.add(rule(peers, clientPorts.stream().map(NetworkPolicyModel::port).toList()));
        rules.add(new NetworkPolicyIngressRuleBuilder().withPorts(otherPorts(clientPorts)).build());
        return new NetworkPolicyBuilder()
                .withMetadata(meta(engine))
                .withNewSpec()
                    .withPodSelector(componentSelector(engine))
                    .withPolicyTypes("Ingress")
                    .withIngress(rules)
                .endSpec()
                .build();
    }

    /** TCP port ranges covering 1..65535 except the given ports. */
    static List<NetworkPolicyPort> otherPorts(List<Integer> excluded) {
        List<NetworkPolicyPort> out = new ArrayList<>();
        int from = 1;
        for (int p : excluded.stream().sorted().toList()) {
            if (p > from) {
                out.add(range(from, p - 1));
            }
            from = p + 1;
        }
        if (from <= 65535) {
            out.add(range(from, 65535));
        }
        return out;
    }

    private static NetworkPolicyPort range(int from, int to) {
        NetworkPolicyPortBuilder b = new NetworkPolicyPortBuilder().withProtocol("TCP").withPort(new IntOrString(from));
        return from == to ? b.build() : b.withEndPort(to).build();
    }

    List<NetworkPolicyPeer> enginePeers() {
        if (spec.engines != null && !spec.engines.isEmpty()) {
            return spec.engines;
        }
        return List.of(new NetworkPolicyPeerBuilder()
                .withNewNamespaceSelector().addToMatchLabels(ENGINE_NAMESPACE_LABEL, pool.getMetadata().getName())
                .endNamespaceSelector().build());
    }

    List<NetworkPolicyPeer> operatorPeers() {
        if (spec.operatorFrom != null && !spec.operatorFrom.isEmpty()) {
            return spec.operatorFrom;
        }
        return List.of(new NetworkPolicyPeerBuilder()
                .withNewNamespaceSelector().addToMatchLabels("kubernetes.io/metadata.name", OPERATOR_NAMESPACE)
                .endNamespaceSelector()
                .withNewPodSelector().addToMatchLabels("app.kubernetes.io/name", OPERATOR_NAME).endPodSelector()
                .build());
    }

    List<NetworkPolicyPeer> monitoringPeers() {
        if (spec.monitoringFrom != null && !spec.monitoringFrom.isEmpty()) {
            return spec.monitoringFrom;
        }
        return List.of(new NetworkPolicyPeerBuilder()
                .withNewNamespaceSelector().addToMatchLabels(MONITORING_NAMESPACE_LABEL, "true").endNamespaceSelector()
                .build());
    }

    private NetworkPolicy allow(String component, List<NetworkPolicyIngressRule> rules) {
        return new NetworkPolicyBuilder()
                .withMetadata(meta(component))
                .withNewSpec()
                    .withPodSelector(componentSelector(component))
                    .withPolicyTypes("Ingress")
                    .withIngress(rules.stream().filter(r -> !r.getFrom().isEmpty()).toList())
                .endSpec()
                .build();
    }

    /** The pool's pods of one component (same namespace). */
    LabelSelector componentSelector(String component) {
        return new LabelSelectorBuilder()
                .addToMatchLabels("app.kubernetes.io/instance", pool.getMetadata().getName())
                .addToMatchLabels("app.kubernetes.io/component", component)
                .build();
    }

    private NetworkPolicyPeer component(String component) {
        return new NetworkPolicyPeerBuilder().withPodSelector(componentSelector(component)).build();
    }

    private static NetworkPolicyIngressRule rule(List<NetworkPolicyPeer> from, List<NetworkPolicyPort> ports) {
        return new NetworkPolicyIngressRuleBuilder().withFrom(from).withPorts(ports).build();
    }

    private static List<NetworkPolicyPort> ports(int... ports) {
        List<NetworkPolicyPort> out = new ArrayList<>();
        for (int p : ports) {
            out.add(port(p));
        }
        return out;
    }

    private static NetworkPolicyPort port(int p) {
        return new NetworkPolicyPortBuilder().withProtocol("TCP").withPort(new IntOrString(p)).build();
    }

    private io.fabric8.kubernetes.api.model.ObjectMeta meta(String what) {
        return new ObjectMetaBuilder()
                .withName(pool.getMetadata().getName() + "-" + what)
                .withNamespace(pool.getMetadata().getNamespace())
                .withLabels(labels())
                .withOwnerReferences(ownerReference())
                .build();
    }

    private static <T> List<T> list(List<T> l) {
        return l == null ? List.of() : l;
    }
}
