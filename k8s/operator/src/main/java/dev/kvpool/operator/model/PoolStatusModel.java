package dev.kvpool.operator.model;

import dev.kvpool.operator.crd.Condition;
import dev.kvpool.operator.crd.KVPool;
import dev.kvpool.operator.crd.KVPoolStatus;
import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.apps.DaemonSet;
import io.fabric8.kubernetes.api.model.apps.Deployment;
import io.fabric8.kubernetes.api.model.apps.StatefulSet;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * The status of a {@link KVPool} computed from what the cluster reports about its workloads, as plain Java (no
 * client): which components are rolled out, which stalled, what failed to apply. The reconciler observes, this class
 * decides; so every condition and message is unit-tested without Kubernetes.
 *
 * <p>Ready: every workload rolled out at the pool's generation and nothing failed. Progressing: a rollout is under
 * way. Degraded: an object could not be applied, a rollout passed its progress deadline, or a step the operator
 * performs in the control plane (e.g. the services' account) was refused; its reason names which.
 */
public final class PoolStatusModel {
    /** What one workload (Deployment, StatefulSet, DaemonSet or an engine's custom resource) reports. */
    public record Rollout(String component, String kind, String name, int want, int ready, boolean updated,
                          boolean stalled, String detail) {
        public boolean done() {
            return updated && ready >= want && !stalled;
        }

        String summary() {
            String s = kind + " " + name + " " + ready + "/" + want + " ready";
            if (!updated) {
                s += ", rolling out";
            }
            if (stalled) {
                s += ", stalled" + (detail == null ? "" : ": " + detail);
            }
            return s;
        }
    }

    /** A step that failed this round, with the CamelCase reason it is reported under. */
    public record Problem(String reason, String message) {
    }

    private PoolStatusModel() {
    }

    /** Reads the rollout state of a workload the operator applied; null for objects that have none (Services...). */
    public static Rollout rollout(HasMetadata o) {
        String component = o.getMetadata().getLabels() == null ? null
                : o.getMetadata().getLabels().get("app.kubernetes.io/component");
        Long generation = o.getMetadata().getGeneration();
        if (o instanceof Deployment d) {
            int want = d.getSpec().getReplicas() == null ? 1 : d.getSpec().getReplicas();
            var st = d.getStatus();
            if (st == null) {
                return new Rollout(component, "Deployment", name(o), want, 0, false, false, null);
            }
            boolean seen = generation == null || (st.getObservedGeneration() != null && st.getObservedGeneration() >= generation);
            boolean updated = seen && n(st.getUpdatedReplicas()) >= want && n(st.getReplicas()) <= want;
            String stalled = null;
            if (st.getConditions() != null) {
                for (var c : st.getConditions()) {
                    if ("Progressing".equals(c.getType()) && "False".equals(c.getStatus())
                            && "ProgressDeadlineExceeded".equals(c.getReason())) {
                        stalled = c.getMessage();
                    }
                }
            }
            return new Rollout(component, "Deployment", name(o), want, n(st.getReadyReplicas()), updated,
                    stalled != null, stalled);
        }
        if (o instanceof StatefulSet s) {
            int want = s.getSpec().getReplicas() == null ? 1 : s.getSpec().getReplicas();
            var st = s.getStatus();
            if (st == null) {
                return new Rollout(component, "StatefulSet", name(o), want, 0, false, false, null);
            }
            boolean seen = generation == null || (st.getObservedGeneration() != null && st.getObservedGeneration() >= generation);
            boolean updated = seen && n(st.getUpdatedReplicas()) >= want
                    && (st.getUpdateRevision() == null || Objects.equals(st.getUpdateRevision(), st.getCurrentRevision()));
            return new Rollout(component, "StatefulSet", name(o), want, n(st.getReadyReplicas()), updated, false, null);
        }
        if (o instanceof DaemonSet ds) {
            var st = ds.getStatus();
            if (st == null) {
                return new Rollout(component, "DaemonSet", name(o), 0, 0, false, false, null);
            }
            boolean seen = generation == null || (st.getObservedGeneration() != null && st.getObservedGeneration() >= generation);
            int want = n(st.getDesiredNumberScheduled());
            boolean updated = seen && n(st.getUpdatedNumberScheduled()) >= want;
            return new Rollout(component, "DaemonSet", name(o), want, n(st.getNumberReady()), updated, false, null);
        }
        if (o instanceof GenericKubernetesResource g) {
            // CloudNativePG, Strimzi: a Ready condition in status.conditions, as both operators publish
            Object status = g.getAdditionalProperties().get("status");
            boolean ready = false;
            String detail = null;
            if (status instanceof Map<?, ?> sm && sm.get("conditions") instanceof List<?> cs) {
                for (Object c : cs) {
                    if (c instanceof Map<?, ?> cm && "Ready".equals(cm.get("type"))) {
                        ready = "True".equals(cm.get("status"));
                        detail = cm.get("message") == null ? null : cm.get("message").toString();
                    }
                }
            }
            if (!hasRolloutState(g)) {
                return null;
            }
            return new Rollout(component, g.getKind(), name(o), 1, ready ? 1 : 0, ready, false, ready ? null : detail);
        }
        return null;
    }

    /** Custom resources the operator waits for (engines); monitoring objects and the like have no rollout. */
    static boolean hasRolloutState(GenericKubernetesResource g) {
        String api = g.getApiVersion() == null ? "" : g.getApiVersion();
        return (api.startsWith("postgresql.cnpg.io/") && "Cluster".equals(g.getKind()))
                || (api.startsWith("kafka.strimzi.io/") && "Kafka".equals(g.getKind()));
    }

    public static KVPoolStatus status(KVPool pool, List<Rollout> rollouts, List<Problem> problems, Instant now) {
        KVPoolStatus previous = pool.getStatus();
        Long generation = pool.getMetadata().getGeneration();
        KVPoolStatus s = new KVPoolStatus();
        s.observedGeneration = generation;

        List<String> waiting = new ArrayList<>();
        List<String> stalled = new ArrayList<>();
        for (Rollout r : rollouts) {
            if (r.stalled()) {
                stalled.add(r.summary());
            } else if (!r.done()) {
                waiting.add(r.summary());
            }
        }
        boolean ready = problems.isEmpty() && waiting.isEmpty() && stalled.isEmpty();
        boolean degraded = !problems.isEmpty() || !stalled.isEmpty();
        boolean progressing = !waiting.isEmpty();

        String readyMsg = ready ? summaryOfReady(rollouts)
                : String.join("; ", concat(problems.stream().map(Problem::message).toList(), stalled, waiting));
        String readyReason = ready ? "Ready" : !problems.isEmpty() ? problems.getFirst().reason()
                : !stalled.isEmpty() ? "RolloutStalled" : "ComponentsNotReady";
        s.conditions.add(condition(previous, Condition.Type.Ready, ready, readyReason, readyMsg, generation, now));
        s.conditions.add(condition(previous, Condition.Type.Progressing, progressing,
                progressing ? "RollingOut" : "Reconciled", progressing ? String.join("; ", waiting) : null,
                generation, now));
        String degradedReason = !problems.isEmpty() ? problems.getFirst().reason()
                : !stalled.isEmpty() ? "RolloutStalled" : "AsExpected";
        s.conditions.add(condition(previous, Condition.Type.Degraded, degraded, degradedReason,
                degraded ? String.join("; ", concat(problems.stream().map(Problem::message).toList(), stalled,
                        List.of())) : null, generation, now));

        String ns = pool.getMetadata().getNamespace();
        s.endpoints = new KVPoolStatus.Endpoints();
        String cp = ControlPlaneModel.of(pool).name() + "." + ns + ".svc";
        s.endpoints.controlPlaneHttp = "http://" + cp + ":" + ControlPlaneModel.HTTP_PORT;
        s.endpoints.controlPlaneGrpc = cp + ":" + ControlPlaneModel.GRPC_PORT;
        s.endpoints.console = s.endpoints.controlPlaneHttp + "/";
        s.endpoints.metadataPlane = "http://" + MetadataPlaneModel.of(pool).name() + "." + ns + ".svc:"
                + MetadataPlaneModel.HTTP_PORT;

        // a component's version moves to spec.version once its rollout is done; until then it stays the running one
        KVPoolStatus.Versions was = previous == null || previous.versions == null ? new KVPoolStatus.Versions()
                : previous.versions;
        s.versions = new KVPoolStatus.Versions();
        s.versions.controlPlane = versionOf(rollouts, ControlPlaneModel.COMPONENT, pool, was.controlPlane);
        s.versions.metadataPlane = versionOf(rollouts, MetadataPlaneModel.COMPONENT, pool, was.metadataPlane);
        s.versions.dataAgent = versionOf(rollouts, "data-agent", pool, was.dataAgent);
        return s;
    }

    private static String versionOf(List<Rollout> rollouts, String component, KVPool pool, String was) {
        List<Rollout> of = rollouts.stream().filter(r -> component.equals(r.component())).toList();
        if (of.isEmpty()) {
            return was;
        }
        return of.stream().allMatch(Rollout::done) ? pool.getSpec().version : was;
    }

    private static String summaryOfReady(List<Rollout> rollouts) {
        List<String> parts = new ArrayList<>();
        for (Rollout r : rollouts) {
            parts.add(r.kind() + " " + r.name() + " " + r.ready() + "/" + r.want());
        }
        return parts.isEmpty() ? "nothing to run" : "all components ready: " + String.join(", ", parts);
    }

    /** Keeps lastTransitionTime while a condition's status does not change (metav1.Condition semantics). */
    private static Condition condition(KVPoolStatus previous, Condition.Type type, boolean on, String reason,
                                       String message, Long generation, Instant now) {
        Condition.Status st = on ? Condition.Status.True : Condition.Status.False;
        String since = now.toString();
        if (previous != null && previous.conditions != null) {
            for (Condition c : previous.conditions) {
                if (c.type == type && c.status == st && c.lastTransitionTime != null) {
                    since = c.lastTransitionTime;
                }
            }
        }
        Condition c = new Condition(type, st, reason, message, since);
        c.observedGeneration = generation;
        return c;
    }

    private static List<String> concat(List<String> a, List<String> b, List<String> c) {
        List<String> out = new ArrayList<>(a);
        out.addAll(b);
        out.addAll(c);
        return out;
    }

    private static String name(HasMetadata o) {
        return o.getMetadata().getName();
    }

    private static int n(Integer i) {
        return i == null ? 0 : i;
    }
}
