package dev.kvpool.operator.reconciler;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.kvpool.operator.controlplane.ControlPlaneApi;
import dev.kvpool.operator.controlplane.ControlPlanes;
import dev.kvpool.operator.controlplane.Drift;
import dev.kvpool.operator.controlplane.InvalidSpec;
import dev.kvpool.operator.crd.Condition;
import dev.kvpool.operator.crd.ControlPlaneObjectStatus;
import dev.kvpool.operator.crd.KVPool;
import io.fabric8.kubernetes.client.CustomResource;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.javaoperatorsdk.operator.api.reconciler.Cleaner;
import io.javaoperatorsdk.operator.api.reconciler.Context;
import io.javaoperatorsdk.operator.api.reconciler.DeleteControl;
import io.javaoperatorsdk.operator.api.reconciler.Reconciler;
import io.javaoperatorsdk.operator.api.reconciler.UpdateControl;
import jakarta.inject.Inject;
import java.io.IOException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.Consumer;
import org.eclipse.microprofile.config.inject.ConfigProperty;
import org.jboss.logging.Logger;

/**
 * Keeps one object of a pool's control plane (storage, instance group, account) equal to a custom resource, through
 * the control plane's REST API.
 *
 * <ul>
 * <li>Create when absent, update with {@code If-Match} when different: a change made between our GET and our PUT
 * is a 412 and a fresh look, never a blind overwrite.</li>
 * <li>Drift: every {@code kvpool.operator.resync-period} the object is read again; a difference while the resource's
 * generation is unchanged was made behind Git's back (console, REST) and is put back, with a {@code Drifted} Event
 * naming each field.</li>
 * <li>A refusal (a 4xx with the control plane's problem detail, or a spec refused before calling) is Ready=False with
 * that message and one Warning Event; it is retried with exponential backoff capped at the resync period, or at once
 * when the spec changes: no hot loop. An unreachable control plane (connection error, timeout, 5xx) is retried with
 * exponential backoff up to 5 minutes.</li>
 * <li>Deletion (finalizer): the object is deleted in the control plane (404 = already gone). Only an object the
 * operator created or adopted ({@code status.controlPlaneVersion} set) is deleted, so a resource whose creation was
 * refused never removes a same-named object someone else made. When the KVPool is gone or being deleted, the
 * finalizer is dropped without calling: its control plane goes with it, and a namespace deletion must not hang on a
 * control plane that no longer exists. While the pool exists, an unreachable control plane keeps the finalizer
 * (retried with backoff) so that a passing outage does not leave the object behind.</li>
 * </ul>
 * Objects of the control plane that no resource names are never read, changed or deleted.
 */
public abstract class ControlPlaneObjectReconciler<R extends CustomResource<?, ? extends ControlPlaneObjectStatus>>
        implements Reconciler<R>, Cleaner<R> {
    private static final Logger LOG = Logger.getLogger(ControlPlaneObjectReconciler.class);
    static final Duration FIRST_RETRY = Duration.ofSeconds(2);
    static final Duration MAX_RETRY = Duration.ofMinutes(5);
    /** A 412 (someone wrote between our GET and PUT): look again soon, the next GET sees their version. */
    static final Duration AFTER_CONFLICT = Duration.ofSeconds(1);

    // field injection: QOSDK makes reconcilers normal-scoped beans, whose proxies need a no-args constructor
    @Inject
    protected KubernetesClient client;
    @Inject
    protected ControlPlanes controlPlanes;
    /** How often the control plane's object is compared with the spec (drift), and a refusal tried again. */
    @ConfigProperty(name = "kvpool.operator.resync-period", defaultValue = "60s")
    protected Duration resync;
    private final Map<String, Integer> failures = new ConcurrentHashMap<>();
    private volatile KubeEvents events;

    /** What the resource asks for: the compared object, fields only written (a password), and when to write them. */
    protected record Desired(ObjectNode object, ObjectNode writeOnly, boolean writeOnlyChanged,
                             Consumer<ControlPlaneObjectStatus> onWritten) {
        static Desired of(ObjectNode object) {
            return new Desired(object, null, false, s -> { });
        }

        ObjectNode body(boolean create) {
            ObjectNode b = object.deepCopy();
            if (writeOnly != null && (create || writeOnlyChanged)) {
                b.setAll(writeOnly);
            }
            return b;
        }
    }

    /** "storage", "instance group", "account": for messages. */
    protected abstract String kind();

    /** {@code /api/v1/...}. */
    protected abstract String collection();

    protected abstract String pool(R r);

    protected abstract String objectName(R r);

    protected abstract ControlPlaneObjectStatus newStatus(R r);

    protected abstract Desired desired(R r) throws InvalidSpec;

    /** Why an existing object of that name must not be taken over, or null. */
    protected String adoptionRefusal(JsonNode actual) {
        return null;
    }

    /** Copies what the control plane reports (usage) into the status. */
    protected void observed(R r, JsonNode actual) {
    }

    private ControlPlaneObjectStatus status(R r) {
        if (r.getStatus() == null) {
            return newStatus(r); // sets it on r
        }
        return r.getStatus();
    }

    private String path(R r) {
        return collection() + "/" + ControlPlaneApi.segment(objectName(r));
    }

    @Override
    public UpdateControl<R> reconcile(R r, Context<R> context) {
        ControlPlaneObjectStatus st = status(r);
        String ns = r.getMetadata().getNamespace();
        Long generation = r.getMetadata().getGeneration();
        String pool = pool(r);
        KVPool kvpool = pool == null ? null : client.resources(KVPool.class).inNamespace(ns).withName(pool).get();
        if (kvpool == null) {
            return refused(r, st, "PoolNotFound", "KVPool '" + pool + "' does not exist in namespace " + ns);
        }
        Desired desired;
        try {
            desired = desired(r);
        } catch (InvalidSpec e) {
            return refused(r, st, "InvalidSpec", e.getMessage());
        }
        ControlPlaneApi api;
        try {
            api = controlPlanes.forPool(kvpool);
        } catch (ControlPlanes.MissingCredentials e) {
            return refused(r, st, "AdminSecretMissing", e.getMessage());
        }
        String name = objectName(r);
        try {
            ControlPlaneApi.Reply current = api.get(path(r));
            if (current.status() == 404) {
                if (st.controlPlaneVersion != null) {
                    event(r, "Warning", "Drifted", kind() + " '" + name + "' was deleted in the control plane "
                            + "behind the resource's back; re-creating it");
                }
                ControlPlaneApi.Reply created = api.post(collection(), desired.body(true));
                if (created.status() == 409 && st.controlPlaneVersion == null) {
                    // created by someone else since our GET: look again (adopt or refuse) instead of failing
                    return again(r, st);
                }
                if (!created.ok()) {
                    return refusedBy(r, st, created, "create");
                }
                desired.onWritten().accept(st);
                return synced(r, st, created, "Created", "created " + kind() + " '" + name + "' in the control plane");
            }
            if (!current.ok()) {
                return refusedBy(r, st, current, "read");
            }
            observed(r, current.body()); // usage shows also while a change is refused (e.g. a quota below it)
            if (st.controlPlaneVersion == null) {
                String refusal = adoptionRefusal(current.body());
                if (refusal == null) {
                    refusal = managedByAnother(r);
                }
                if (refusal != null) {
                    return refused(r, st, "Refused", refusal);
                }
            }
            List<String> changes = Drift.changes(desired.object(), current.body());
            boolean adopting = st.controlPlaneVersion == null;
            if (changes.isEmpty() && !desired.writeOnlyChanged() && !adopting) {
                return synced(r, st, current, null, null);
            }
            if (current.etag() == null) {
                return refused(r, st, "Refused", "the control plane sent no ETag for " + kind() + " '" + name
                        + "'; the operator updates only with If-Match");
            }
            if (changes.isEmpty() && !desired.writeOnlyChanged()) {
                return synced(r, st, current, "Adopted", "took over the existing " + kind() + " '" + name + "'");
            }
            boolean drift = !adopting && Objects.equals(generation, st.observedGeneration)
                    && !changes.isEmpty();
            ControlPlaneApi.Reply updated = api.put(path(r), current.etag(), desired.body(adopting));
            if (updated.status() == 412) {
                return again(r, st);
            }
            if (!updated.ok()) {
                return refusedBy(r, st, updated, "update");
            }
            desired.onWritten().accept(st);
            if (drift) {
                String what = String.join("; ", changes);
                event(r, "Warning", "Drifted", kind() + " '" + name + "' was changed outside the resource; put back: "
                        + what);
                return synced(r, st, updated, "DriftCorrected", "put back a change made in the control plane: " + what);
            }
            return adopting
                    ? synced(r, st, updated, "Adopted", "took over the existing " + kind() + " '" + name + "' and "
                            + "updated it" + (changes.isEmpty() ? "" : ": " + String.join("; ", changes)))
                    : synced(r, st, updated, "Updated", changes.isEmpty()
                            ? "updated " + kind() + " '" + name + "' (write-only fields, e.g. a password from its Secret)"
                            : "updated " + kind() + " '" + name + "': " + String.join("; ", changes));
        } catch (ControlPlaneApi.CredentialsRefused e) {
            return refused(r, st, "CredentialsRefused", e.getMessage());
        } catch (IOException e) {
            return unavailable(r, st, e);
        }
    }

    @Override
    public DeleteControl cleanup(R r, Context<R> context) {
        DeleteControl d = delete(r);
        if (d.isRemoveFinalizer()) {
            failures.remove(r.getMetadata().getUid());
        }
        return d;
    }

    private DeleteControl delete(R r) {
        ControlPlaneObjectStatus st = r.getStatus();
        String ns = r.getMetadata().getNamespace();
        String name = objectName(r);
        if (st == null || st.controlPlaneVersion == null) {
            return DeleteControl.defaultDelete(); // never created or adopted: not ours to delete
        }
        KVPool kvpool = client.resources(KVPool.class).inNamespace(ns).withName(pool(r)).get();
        if (kvpool == null || kvpool.isMarkedForDeletion()) {
            LOG.infof("%s/%s: KVPool '%s' is gone or going; dropping the finalizer without deleting %s '%s'", ns,
                    r.getMetadata().getName(), pool(r), kind(), name);
            return DeleteControl.defaultDelete();
        }
        try {
            ControlPlaneApi.Reply d = controlPlanes.forPool(kvpool).delete(path(r));
            if (d.ok() || d.status() == 404) {
                return DeleteControl.defaultDelete();
            }
            String msg = "the control plane refused to delete " + kind() + " '" + name + "': HTTP " + d.status()
                    + " " + d.detail();
            deleteBlocked(r, st, "DeleteRefused", msg);
            return DeleteControl.noFinalizerRemoval().rescheduleAfter(resync);
        } catch (ControlPlanes.MissingCredentials | ControlPlaneApi.CredentialsRefused e) {
            deleteBlocked(r, st, "AdminSecretMissing", e.getMessage());
            return DeleteControl.noFinalizerRemoval().rescheduleAfter(resync);
        } catch (IOException e) {
            deleteBlocked(r, st, "ControlPlaneUnavailable", e.getMessage());
            return DeleteControl.noFinalizerRemoval().rescheduleAfter(backoff(r));
        }
    }

    private void deleteBlocked(R r, ControlPlaneObjectStatus st, String reason, String message) {
        if (setReady(st, Condition.Status.False, reason, message, r.getMetadata().getGeneration())) {
            event(r, "Warning", reason, message);
            try {
                client.resource(r).patchStatus();
            } catch (KubernetesClientException e) {
                LOG.debugf("status of %s not patched: %s", r.getMetadata().getName(), e.getMessage());
            }
        }
    }

    /**
     * Two resources naming the same object of one pool would undo each other's changes as drift forever: the one
     * that manages it already (has a control-plane version) keeps it, the newcomer is refused.
     */
    @SuppressWarnings("unchecked")
    private String managedByAnother(R r) {
        String pool = pool(r);
        String name = objectName(r);
        for (R other : client.resources((Class<R>) r.getClass()).inNamespace(r.getMetadata().getNamespace()).list()
                .getItems()) {
            if (!Objects.equals(other.getMetadata().getUid(), r.getMetadata().getUid())
                    && other.getSpec() != null && Objects.equals(pool, pool(other))
                    && Objects.equals(name, objectName(other)) && other.getStatus() != null
                    && other.getStatus().controlPlaneVersion != null) {
                return kind() + " '" + name + "' of pool '" + pool + "' is already managed by "
                        + other.getKind() + " " + other.getMetadata().getName();
            }
        }
        return null;
    }

    // ------------------------------------------------------------------------------------------ outcomes

    private UpdateControl<R> synced(R r, ControlPlaneObjectStatus st, ControlPlaneApi.Reply reply, String reason,
                                    String message) {
        failures.remove(r.getMetadata().getUid());
        Long version = reply.version();
        if (version != null) {
            st.controlPlaneVersion = version;
        }
        st.observedGeneration = r.getMetadata().getGeneration();
        observed(r, reply.body());
        Condition ready = find(st, Condition.Type.Ready);
        if (reason != null) {
            setReady(st, Condition.Status.True, reason, message, st.observedGeneration);
            if (!reason.equals("DriftCorrected")) { // that one has its own Warning event
                event(r, "Normal", reason, message);
            }
        } else if (ready == null || ready.status != Condition.Status.True) {
            setReady(st, Condition.Status.True, "InSync", kind() + " '" + objectName(r)
                    + "' in the control plane equals the spec", st.observedGeneration);
        } else {
            ready.observedGeneration = st.observedGeneration;
        }
        return UpdateControl.patchStatus(r).rescheduleAfter(resync);
    }

    private UpdateControl<R> refusedBy(R r, ControlPlaneObjectStatus st, ControlPlaneApi.Reply reply, String what) {
        return refused(r, st, "Refused", "the control plane refused to " + what + " " + kind() + " '"
                + objectName(r) + "': HTTP " + reply.status() + " " + reply.detail());
    }

    /**
     * Ready=False with the reason; one Warning Event per distinct message. Retried with backoff capped at the resync
     * period (a group created with its storage in one {@code kubectl apply} may be refused until the storage exists:
     * it should not wait a whole period), or at once when the spec changes.
     */
    private UpdateControl<R> refused(R r, ControlPlaneObjectStatus st, String reason, String message) {
        st.observedGeneration = r.getMetadata().getGeneration();
        if (setReady(st, Condition.Status.False, reason, message, st.observedGeneration)) {
            event(r, "Warning", reason, message);
        }
        Duration delay = backoff(r);
        return UpdateControl.patchStatus(r).rescheduleAfter(delay.compareTo(resync) < 0 ? delay : resync);
    }

    private UpdateControl<R> unavailable(R r, ControlPlaneObjectStatus st, IOException e) {
        Duration delay = backoff(r);
        String message = e.getMessage() + "; retrying in " + delay.toSeconds() + " s";
        LOG.infof("%s/%s: %s", r.getMetadata().getNamespace(), r.getMetadata().getName(), message);
        Condition old = find(st, Condition.Type.Ready);
        boolean wasUnavailable = old != null && "ControlPlaneUnavailable".equals(old.reason);
        setReady(st, Condition.Status.False, "ControlPlaneUnavailable", message, st.observedGeneration);
        if (!wasUnavailable) {
            event(r, "Warning", "ControlPlaneUnavailable", e.getMessage());
        }
        return UpdateControl.patchStatus(r).rescheduleAfter(delay);
    }

    private UpdateControl<R> again(R r, ControlPlaneObjectStatus st) {
        return UpdateControl.<R>noUpdate().rescheduleAfter(AFTER_CONFLICT);
    }

    /** 2 s, 4 s, 8 s, ... up to 5 min, with ±20 % jitter so that many resources do not retry in step. */
    private Duration backoff(R r) {
        int n = failures.merge(r.getMetadata().getUid(), 1, Integer::sum);
        long ms = FIRST_RETRY.toMillis() << Math.min(n - 1, 20);
        ms = Math.min(ms, MAX_RETRY.toMillis());
        return Duration.ofMillis((long) (ms * (0.8 + 0.4 * ThreadLocalRandom.current().nextDouble())));
    }

    // ------------------------------------------------------------------------------------------ helpers

    static Condition find(ControlPlaneObjectStatus st, Condition.Type type) {
        if (st.conditions == null) {
            return null;
        }
        return st.conditions.stream().filter(c -> c.type == type).findFirst().orElse(null);
    }

    /** Sets Ready; keeps lastTransitionTime while its status stays. Returns whether status, reason or message changed. */
    static boolean setReady(ControlPlaneObjectStatus st, Condition.Status status, String reason, String message,
                            Long generation) {
        Condition old = find(st, Condition.Type.Ready);
        boolean changed = old == null || old.status != status || !Objects.equals(old.reason, reason)
                || !Objects.equals(old.message, message);
        String since = old != null && old.status == status && old.lastTransitionTime != null
                ? old.lastTransitionTime : Instant.now().toString();
        Condition c = new Condition(Condition.Type.Ready, status, reason, message, since);
        c.observedGeneration = generation;
        List<Condition> cs = new ArrayList<>();
        if (st.conditions != null) {
            st.conditions.stream().filter(x -> x.type != Condition.Type.Ready).forEach(cs::add);
        }
        cs.add(c);
        st.conditions = cs;
        return changed;
    }

    /** A core/v1 Event on the resource, through the operator's one event writer. Never carries a password: callers
     * pass details from the control plane's problem+json, which never echoes one. */
    protected void event(R r, String type, String reason, String message) {
        if (events == null) {
            events = new KubeEvents(client);
        }
        if ("Warning".equals(type)) {
            events.warning(r, reason, message);
        } else {
            events.normal(r, reason, message);
        }
    }
}
