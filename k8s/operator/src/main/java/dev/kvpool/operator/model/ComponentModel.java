package dev.kvpool.operator.model;

import dev.kvpool.operator.crd.KVPool;
import io.fabric8.kubernetes.api.model.ContainerPort;
import io.fabric8.kubernetes.api.model.ContainerPortBuilder;
import io.fabric8.kubernetes.api.model.IntOrString;
import io.fabric8.kubernetes.api.model.OwnerReference;
import io.fabric8.kubernetes.api.model.Service;
import io.fabric8.kubernetes.api.model.ServiceBuilder;
import io.fabric8.kubernetes.api.model.Volume;
import io.fabric8.kubernetes.api.model.VolumeMount;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/** What every component's model of one KVPool shares: its name, image, labels and owner, from {@link Workloads}. */
abstract class ComponentModel {
    protected final KVPool pool;
    protected final Workloads w;

    ComponentModel(KVPool pool, String component) {
        this.pool = pool;
        this.w = Workloads.of(pool, component);
    }

    /** {@code <pool>-<component>}: the name of the component's objects. */
    public String name() {
        return w.name();
    }

    public String image() {
        return w.image();
    }

    /** The labels of every object and the pod template; the first three also select the pods. */
    public Map<String, String> labels() {
        return w.labels();
    }

    public Map<String, String> selector() {
        return w.selector();
    }

    public OwnerReference ownerReference() {
        return w.ownerReference();
    }

    /** Prefer one replica per node (preferred, not required: a one-node cluster still runs them all). */
    io.fabric8.kubernetes.api.model.Affinity preferOnePerNode() {
        return new io.fabric8.kubernetes.api.model.AffinityBuilder()
                .withNewPodAntiAffinity()
                    .addNewPreferredDuringSchedulingIgnoredDuringExecution()
                        .withWeight(100)
                        .withNewPodAffinityTerm()
                            .withTopologyKey("kubernetes.io/hostname")
                            .withNewLabelSelector().withMatchLabels(selector()).endLabelSelector()
                        .endPodAffinityTerm()
                    .endPreferredDuringSchedulingIgnoredDuringExecution()
                .endPodAntiAffinity()
                .build();
    }

    /** The planes' ClusterIP Service: their named ports http and grpc. */
    Service httpGrpcService(int http, int grpc) {
        return new ServiceBuilder()
                .withMetadata(w.metadata())
                .withNewSpec()
                    .withType("ClusterIP")
                    .withSelector(selector())
                    .addNewPort().withName("http").withPort(http).withTargetPort(new IntOrString("http")).withProtocol("TCP").endPort()
                    .addNewPort().withName("grpc").withPort(grpc).withTargetPort(new IntOrString("grpc")).withProtocol("TCP").endPort()
                .endSpec()
                .build();
    }

    /** The planes' container ports, named as the Service and the probes refer to them. */
    static List<ContainerPort> httpGrpcPorts(int http, int grpc) {
        return List.of(
                new ContainerPortBuilder().withName("http").withContainerPort(http).withProtocol("TCP").build(),
                new ContainerPortBuilder().withName("grpc").withContainerPort(grpc).withProtocol("TCP").build());
    }

    /** What every KVPool service mounts: the writable emptyDirs, and the Kafka client Secret where Kafka needs TLS/SASL. */
    List<Volume> serviceVolumes() {
        List<Volume> v = new ArrayList<>(Workloads.volumes());
        v.addAll(EngineEndpoints.of(pool).kafkaClientVolumes());
        return v;
    }

    List<VolumeMount> serviceVolumeMounts() {
        List<VolumeMount> m = new ArrayList<>(Workloads.volumeMounts());
        m.addAll(EngineEndpoints.of(pool).kafkaClientVolumeMounts());
        return m;
    }
}
