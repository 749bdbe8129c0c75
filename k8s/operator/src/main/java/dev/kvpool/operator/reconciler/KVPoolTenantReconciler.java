package dev.kvpool.operator.reconciler;

import com.fasterxml.jackson.databind.JsonNode;
import dev.kvpool.operator.controlplane.ControlPlanes;
import dev.kvpool.operator.controlplane.InvalidSpec;
import dev.kvpool.operator.controlplane.TenantMapping;
import dev.kvpool.operator.crd.ControlPlaneObjectStatus;
import dev.kvpool.operator.crd.KVPoolTenant;
import dev.kvpool.operator.crd.Names;
import dev.kvpool.operator.crd.SecretKeyRef;
import io.fabric8.kubernetes.api.model.Secret;
import io.javaoperatorsdk.operator.api.reconciler.ControllerConfiguration;
import io.quarkiverse.operatorsdk.annotations.RBACRule;
import io.javaoperatorsdk.operator.api.config.informer.InformerEventSourceConfiguration;
import io.javaoperatorsdk.operator.api.reconciler.EventSourceContext;
import io.javaoperatorsdk.operator.processing.event.ResourceID;
import io.javaoperatorsdk.operator.processing.event.source.EventSource;
import io.javaoperatorsdk.operator.processing.event.source.informer.InformerEventSource;
import java.util.List;
import java.util.Objects;
import java.util.stream.Collectors;

/**
 * Keeps a tenant account of the pool's control plane equal to a {@link KVPoolTenant} (see the base class).
 *
 * <p>The password comes from {@code spec.passwordSecretRef}. The control plane never returns it, so it is not compared;
 * it is written on creation and whenever the Secret changes. A change is noticed by the Secret's
 * {@code uid/resourceVersion}, kept in {@code status.passwordSecretVersion}; the Secrets of the namespace are watched,
 * so a changed one wakes the tenants that name it at once (the resync is the safety net): no hash of the password is stored anywhere, and the password is never logged nor put in a
 * status or an Event (the control plane's refusals name the rule, never the value).
 */
@ControllerConfiguration(name = "kvpooltenant")
@RBACRule(apiGroups = Names.GROUP, resources = "kvpools", verbs = {"get", "list", "watch"})
// the admin Secret of the pool (and, for tenants, the password Secret): read only
@RBACRule(apiGroups = "", resources = "secrets", verbs = {"get", "list", "watch"})
@RBACRule(apiGroups = "", resources = "events", verbs = {"create", "patch"})
public class KVPoolTenantReconciler extends ControlPlaneObjectReconciler<KVPoolTenant> {
    /** The control plane refuses longer ones (Limits.MAX_TEXT); refusing here keeps them out of request bodies. */
    static final int MAX_PASSWORD = 4096;

    @Override
    public List<EventSource<?, KVPoolTenant>> prepareEventSources(EventSourceContext<KVPoolTenant> context) {
        // a Secret maps to the tenants of its namespace whose passwordSecretRef names it
        return List.of(new InformerEventSource<>(InformerEventSourceConfiguration.from(Secret.class, KVPoolTenant.class)
                .withName("password-secrets")
                .withSecondaryToPrimaryMapper(secret -> context.getPrimaryCache()
                        .list(secret.getMetadata().getNamespace(), t -> t.getSpec() != null
                                && t.getSpec().passwordSecretRef != null
                                && secret.getMetadata().getName().equals(t.getSpec().passwordSecretRef.name))
                        .map(ResourceID::fromResource).collect(Collectors.toSet()))
                .build(), context));
    }

    @Override
    protected String kind() {
        return "account";
    }

    @Override
    protected String collection() {
        return TenantMapping.COLLECTION;
    }

    @Override
    protected String pool(KVPoolTenant r) {
        return r.getSpec().pool;
    }

    @Override
    protected String objectName(KVPoolTenant r) {
        return TenantMapping.name(r);
    }

    @Override
    protected ControlPlaneObjectStatus newStatus(KVPoolTenant r) {
        r.setStatus(new KVPoolTenant.Status());
        return r.getStatus();
    }

    @Override
    protected String adoptionRefusal(JsonNode actual) {
        return TenantMapping.adoptionRefusal(actual);
    }

    @Override
    protected Desired desired(KVPoolTenant r) throws InvalidSpec {
        SecretKeyRef ref = r.getSpec().passwordSecretRef;
        if (ref == null || ref.name == null || ref.key == null) {
            throw new InvalidSpec("spec.passwordSecretRef (name and key) is required");
        }
        String ns = r.getMetadata().getNamespace();
        Secret s = client.secrets().inNamespace(ns).withName(ref.name).get();
        if (s == null) {
            throw new InvalidSpec("password Secret " + ns + "/" + ref.name + " does not exist");
        }
        String password = ControlPlanes.value(s, ref.key);
        if (password == null || password.isEmpty()) {
            throw new InvalidSpec("password Secret " + ns + "/" + ref.name + " has no key '" + ref.key + "'");
        }
        if (password.length() > MAX_PASSWORD) {
            throw new InvalidSpec("the password in Secret " + ns + "/" + ref.name + " key '" + ref.key
                    + "' is longer than " + MAX_PASSWORD + " characters");
        }
        String version = s.getMetadata().getUid() + "/" + s.getMetadata().getResourceVersion() + "/" + ref.key;
        KVPoolTenant.Status st = r.getStatus();
        boolean changed = st == null || !Objects.equals(st.passwordSecretVersion, version);
        return new Desired(TenantMapping.desired(r),
                com.fasterxml.jackson.databind.node.JsonNodeFactory.instance.objectNode().put("password", password),
                changed, status -> ((KVPoolTenant.Status) status).passwordSecretVersion = version);
    }
}
