package dev.kvpool.operator.reconciler;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.fail;

import dev.kvpool.operator.crd.Condition;
import dev.kvpool.operator.crd.KVPool;
import dev.kvpool.operator.crd.KVPoolSpec;
import dev.kvpool.operator.crd.SecretRef;
import io.fabric8.kubernetes.api.model.ObjectMetaBuilder;
import io.fabric8.kubernetes.api.model.Service;
import io.fabric8.kubernetes.api.model.apps.Deployment;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.quarkus.test.junit.QuarkusTest;
import io.quarkus.test.kubernetes.client.WithKubernetesTestServer;
import jakarta.inject.Inject;
import java.time.Duration;
import java.util.function.Supplier;
import org.junit.jupiter.api.Test;

/** The operator against the fabric8 mock server (CRUD mode; no kube-apiserver can run here). */
@QuarkusTest
@WithKubernetesTestServer(crud = true)
class KVPoolReconcilerTest {
    static final String NS = "kvpool-test";

    @Inject
    KubernetesClient client;

    @Test
    void appliesTheControlPlaneAndReportsStatus() {
        KVPool pool = new KVPool();
        pool.setMetadata(new ObjectMetaBuilder().withName("demo").withNamespace(NS).build());
        KVPoolSpec spec = new KVPoolSpec();
        spec.version = "0.4.2";
        spec.engines = new KVPoolSpec.Engines();
        spec.engines.postgres = new KVPoolSpec.Postgres();
        spec.engines.postgres.secretRef = new SecretRef("demo-db");
        pool.setSpec(spec);
        client.resource(pool).create();

        Deployment d = await(() -> client.apps().deployments().inNamespace(NS).withName("demo-control-plane").get());
        assertEquals("ghcr.io/kvpool/kvpool-control-plane:0.4.2",
                d.getSpec().getTemplate().getSpec().getContainers().getFirst().getImage());
        assertEquals("demo", d.getMetadata().getOwnerReferences().getFirst().getName());
        Service s = await(() -> client.services().inNamespace(NS).withName("demo-control-plane").get());
        assertEquals(2, s.getSpec().getPorts().size());

        KVPool reconciled = await(() -> {
            KVPool p = client.resources(KVPool.class).inNamespace(NS).withName("demo").get();
            return p.getStatus() != null && p.getStatus().observedGeneration != null ? p : null;
        });
        assertEquals(reconciled.getMetadata().getGeneration(), reconciled.getStatus().observedGeneration);
        // the mock server runs no pods: the control plane stays not ready
        Condition ready = reconciled.getStatus().conditions.stream().filter(c -> c.type == Condition.Type.Ready)
                .findFirst().orElseThrow();
        assertEquals(Condition.Status.False, ready.status);
        assertNotNull(ready.lastTransitionTime);
        assertEquals("http://demo-control-plane.kvpool-test.svc:6492", reconciled.getStatus().endpoints.controlPlaneHttp);
        assertEquals("0.4.2", reconciled.getStatus().versions.controlPlane);
    }

    static <T> T await(Supplier<T> probe) {
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while (System.nanoTime() < deadline) {
            T t = probe.get();
            if (t != null) {
                return t;
            }
            try {
                Thread.sleep(100);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                break;
            }
        }
        return fail("timed out");
    }
}
