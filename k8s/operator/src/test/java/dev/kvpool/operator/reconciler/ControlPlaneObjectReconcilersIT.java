package dev.kvpool.operator.reconciler;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.kvpool.operator.controlplane.ControlPlaneApi;
import dev.kvpool.operator.crd.Condition;
import dev.kvpool.operator.crd.ControlPlaneObjectStatus;
import dev.kvpool.operator.crd.KVPool;
import dev.kvpool.operator.crd.KVPoolInstanceGroup;
import dev.kvpool.operator.crd.KVPoolSpec;
import dev.kvpool.operator.crd.KVPoolStorage;
import dev.kvpool.operator.crd.KVPoolTenant;
import dev.kvpool.operator.crd.PoolSecrets;
import dev.kvpool.operator.crd.SecretKeyRef;
import dev.kvpool.operator.crd.SecretRef;
import io.fabric8.kubernetes.api.model.Event;
import io.fabric8.kubernetes.api.model.ObjectMetaBuilder;
import io.fabric8.kubernetes.api.model.SecretBuilder;
import io.fabric8.kubernetes.client.CustomResource;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.quarkus.test.common.QuarkusTestResource;
import io.quarkus.test.junit.QuarkusTest;
import io.quarkus.test.kubernetes.client.WithKubernetesTestServer;
import jakarta.inject.Inject;
import java.io.IOException;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.function.Predicate;
import java.util.function.Supplier;
import org.junit.jupiter.api.Test;

/**
 * The storage, instance-group and tenant reconcilers against real services: the packaged control plane (child JVM,
 * H2) and the fabric8 mock server in CRUD mode standing in for the API server (no kube-apiserver can run here).
 */
@QuarkusTest
@WithKubernetesTestServer(crud = true)
@QuarkusTestResource(value = ControlPlaneProcess.class, restrictToAnnotatedClass = true)
class ControlPlaneObjectReconcilersIT {
    static final String NS = "gitops-it";
    static final String POOL = "demo";
    static final String TENANT_PW = "Tenant-Passw0rd-One";
    static final String TENANT_PW2 = "Tenant-Passw0rd-Two";

    @Inject
    KubernetesClient client;

    /** The control plane as a person at the console (or a script) would change it: behind the operator's back. */
    ControlPlaneApi admin() {
        return new ControlPlaneApi(ControlPlaneProcess.url, ControlPlaneProcess.ADMIN_USER,
                ControlPlaneProcess.ADMIN_PASSWORD, Duration.ofSeconds(10));
    }

    @Test
    void storagesGroupsAndTenantsFollowTheirResources() throws Exception {
        ControlPlaneApi cp = admin();
        createPool(POOL);

        // --- create: the three appear in the control plane; status carries their version
        KVPoolStorage storage = new KVPoolStorage();
        storage.setMetadata(meta("nfs-01"));
        storage.setSpec(new KVPoolStorage.Spec());
        storage.getSpec().pool = POOL;
        storage.getSpec().name = "nfs_01";
        storage.getSpec().type = "nfs";
        storage.getSpec().spec = ControlPlaneApi.JSON.readTree("{\"root_path\":\"/mnt/kv/\",\"key_count_per_file\":8}");
        client.resource(storage).create();

        KVPoolInstanceGroup group = new KVPoolInstanceGroup();
        group.setMetadata(meta("search"));
        group.setSpec(new KVPoolInstanceGroup.Spec());
        group.getSpec().pool = POOL;
        group.getSpec().quotaBytes = 1_000_000L;
        group.getSpec().storageCandidates = List.of("nfs_01");
        group.getSpec().waterLevels = new KVPoolInstanceGroup.WaterLevels();
        group.getSpec().waterLevels.soft = 70;
        group.getSpec().waterLevels.hard = 90;
        client.resource(group).create();

        client.resource(new SecretBuilder().withMetadata(meta("team-a-password"))
                .addToStringData("password", TENANT_PW).build()).create();
        KVPoolTenant tenant = new KVPoolTenant();
        tenant.setMetadata(meta("team-a"));
        tenant.setSpec(new KVPoolTenant.Spec());
        tenant.getSpec().pool = POOL;
        tenant.getSpec().groups = List.of("search");
        tenant.getSpec().passwordSecretRef = new SecretKeyRef("team-a-password", "password");
        client.resource(tenant).create();

        KVPoolStorage s = awaitReady(KVPoolStorage.class, "nfs-01", x -> true);
        ControlPlaneApi.Reply cpStorage = cp.get("/api/v1/storages/nfs_01");
        assertEquals(200, cpStorage.status());
        assertEquals("/mnt/kv/", cpStorage.body().at("/spec/root_path").asText());
        assertEquals(cpStorage.version(), s.getStatus().controlPlaneVersion);

        KVPoolInstanceGroup g = awaitReady(KVPoolInstanceGroup.class, "search", x -> x.getStatus().usage != null);
        ControlPlaneApi.Reply cpGroup = cp.get("/api/v1/instance-groups/search");
        assertEquals(1_000_000L, cpGroup.body().get("quotaBytes").asLong());
        assertEquals(90, cpGroup.body().at("/waterLevels/hardPercent").asInt());
        assertEquals(cpGroup.version(), g.getStatus().controlPlaneVersion);
        assertEquals("ok", g.getStatus().usage.level);

        KVPoolTenant t = awaitReady(KVPoolTenant.class, "team-a", x -> true);
        ControlPlaneApi.Reply cpAccount = cp.get("/api/v1/accounts/team-a");
        assertEquals("tenant", cpAccount.body().get("role").asText());
        assertEquals("[\"search\"]", cpAccount.body().get("groups").toString());
        assertEquals(cpAccount.version(), t.getStatus().controlPlaneVersion);
        assertTrue(canLogIn("team-a", TENANT_PW), "the tenant logs in with the Secret's password");
        assertFalse(t.getStatus().toString().contains(TENANT_PW));

        // --- update the quota while the control plane is unreachable: reported, retried with backoff, applied once
        // it is back
        int closed = ControlPlaneProcess.freePort();
        ControlPlaneProcess.operatorPath.switchTo(closed);
        edit(KVPoolInstanceGroup.class, "search", x -> x.getSpec().quotaBytes = 2_000_000L);
        KVPoolInstanceGroup down = awaitStatus(KVPoolInstanceGroup.class, "search",
                x -> ready(x) != null && "ControlPlaneUnavailable".equals(ready(x).reason));
        assertEquals(Condition.Status.False, ready(down).status);
        assertTrue(ready(down).message.contains("unreachable") && ready(down).message.contains("retrying in"),
                ready(down).message);
        awaitEvent("search", "ControlPlaneUnavailable", "unreachable");
        assertEquals(1_000_000L, quota(cp));
        ControlPlaneProcess.operatorPath.switchTo(ControlPlaneProcess.httpPort);
        until("quota 2000000 in the control plane", () -> quota(cp) == 2_000_000L);
        KVPoolInstanceGroup g2 = awaitReady(KVPoolInstanceGroup.class, "search",
                x -> x.getStatus().controlPlaneVersion > g.getStatus().controlPlaneVersion);
        assertEquals(g2.getMetadata().getGeneration(), g2.getStatus().observedGeneration);

        // --- a refusal lands in status (and an Event), the control plane keeps its value
        ObjectNode usage = ControlPlaneApi.JSON.createObjectNode();
        usage.putArray("samples").addObject().put("group", "search").put("storageType", "nfs")
                .put("usedBytes", 1_500_000L).put("timestamp", Instant.now().toString());
        assertEquals(202, cp.post("/api/v1/usage", usage).status());
        awaitStatus(KVPoolInstanceGroup.class, "search",
                x -> x.getStatus().usage != null && x.getStatus().usage.usedBytes == 1_500_000L);
        edit(KVPoolInstanceGroup.class, "search", x -> x.getSpec().quotaBytes = 1_000_000L);
        Condition refused = awaitCondition(KVPoolInstanceGroup.class, "search", Condition.Status.False, "Refused");
        assertTrue(refused.message.contains("HTTP 409") && refused.message.contains("below the group's current usage"),
                refused.message);
        assertEquals(2_000_000L, quota(cp));
        awaitEvent("search", "Refused", "below the group's current usage");
        // retried at the resync period, not in a hot loop, and reported once while the message stays the same
        Thread.sleep(3 * ControlPlaneProcess.RESYNC.toMillis());
        List<String> refusals = client.v1().events().inNamespace(NS).list().getItems().stream()
                .filter(e -> "search".equals(e.getInvolvedObject().getName()) && "Refused".equals(e.getReason())
                        && e.getMessage().contains("below the group's current usage"))
                .map(e -> e.getLastTimestamp() + " " + e.getMessage()).toList();
        assertEquals(1, refusals.size(), refusals.toString());
        // a spec change clears it
        edit(KVPoolInstanceGroup.class, "search", x -> x.getSpec().quotaBytes = 3_000_000L);
        // Ready=True for the new generation: "Updated", or "InSync" when the status patch of the updating reconcile
        // lost a race and the next one found the control plane already equal to the spec (seen 2 runs in 7)
        awaitStatus(KVPoolInstanceGroup.class, "search", x -> x.getMetadata().getGeneration()
                .equals(x.getStatus().observedGeneration) && ready(x) != null && ready(x).status == Condition.Status.True
                && List.of("Updated", "InSync").contains(ready(x).reason));
        assertEquals(3_000_000L, quota(cp));
        KVPoolInstanceGroup g3 = awaitStatus(KVPoolInstanceGroup.class, "search",
                x -> x.getStatus().usage != null && x.getStatus().usage.usedPercent == 50.0);
        assertEquals("ok", g3.getStatus().usage.level);

        // --- drift: a change made through the REST API behind the operator's back is put back
        ControlPlaneApi.Reply before = cp.get("/api/v1/instance-groups/search");
        ObjectNode console = ControlPlaneApi.JSON.createObjectNode();
        console.putObject("waterLevels").put("softPercent", 60).put("hardPercent", 99);
        ControlPlaneApi.Reply changed = cp.put("/api/v1/instance-groups/search", before.etag(), console);
        assertEquals(200, changed.status(), changed.detail());
        until("water level put back", () -> cp.get("/api/v1/instance-groups/search").body()
                .at("/waterLevels/hardPercent").asInt() == 90);
        Event drifted = awaitEvent("search", "Drifted", "waterLevels.hardPercent: control plane has 99, spec wants 90");
        assertTrue(drifted.getMessage().contains("waterLevels.softPercent: control plane has 60, spec wants 70"),
                drifted.getMessage());
        awaitCondition(KVPoolInstanceGroup.class, "search", Condition.Status.True, "DriftCorrected");

        // --- the tenant's password follows its Secret
        client.secrets().inNamespace(NS).withName("team-a-password")
                .edit(x -> new SecretBuilder(x).withData(null).addToStringData("password", TENANT_PW2).build());
        until("the new password works", () -> canLogIn("team-a", TENANT_PW2));
        assertFalse(canLogIn("team-a", TENANT_PW));
        for (Event e : client.v1().events().inNamespace(NS).list().getItems()) {
            assertFalse(e.getMessage().contains(TENANT_PW) || e.getMessage().contains(TENANT_PW2), e.getMessage());
        }

        // --- an account deleted behind the operator's back is re-created, with the password from its Secret
        assertEquals(204, cp.delete("/api/v1/accounts/team-a").status());
        awaitEvent("team-a", "Drifted", "was deleted in the control plane");
        until("the account is back and its password works", () -> canLogIn("team-a", TENANT_PW2));

        // --- a group naming a storage that does not exist yet is kept as given (KVCM §3.11) and shows it missing
        KVPoolInstanceGroup pending = new KVPoolInstanceGroup();
        pending.setMetadata(meta("pending"));
        pending.setSpec(new KVPoolInstanceGroup.Spec());
        pending.getSpec().pool = POOL;
        pending.getSpec().quotaBytes = 1_000L;
        pending.getSpec().storageCandidates = List.of("nope");
        client.resource(pending).create();
        until("pending group created", () -> cp.get("/api/v1/instance-groups/pending").status() == 200);
        assertEquals("[\"nope\"]", cp.get("/api/v1/instance-groups/pending").body().path("missingStorages").toString());
        client.resources(KVPoolInstanceGroup.class).inNamespace(NS).withName("pending").delete();
        until("pending gone", () -> client.resources(KVPoolInstanceGroup.class).inNamespace(NS).withName("pending").get() == null);

        // --- a group the control plane refuses (a candidate that is no storage name) stays Refused; deleting it
        // removes nothing there
        KVPoolInstanceGroup bad = new KVPoolInstanceGroup();
        bad.setMetadata(meta("bad"));
        bad.setSpec(new KVPoolInstanceGroup.Spec());
        bad.getSpec().pool = POOL;
        bad.getSpec().quotaBytes = 1_000L;
        bad.getSpec().storageCandidates = List.of("no pe/..");
        client.resource(bad).create();
        Condition refusedBad = awaitCondition(KVPoolInstanceGroup.class, "bad", Condition.Status.False, "Refused");
        assertTrue(refusedBad.message.contains("storageCandidates[0]"), refusedBad.message);
        assertEquals(404, cp.get("/api/v1/instance-groups/bad").status());
        client.resources(KVPoolInstanceGroup.class).inNamespace(NS).withName("bad").delete();
        until("bad gone", () -> client.resources(KVPoolInstanceGroup.class).inNamespace(NS).withName("bad").get() == null);

        // --- a second resource naming the same group is refused, and deleting it leaves the group alone
        KVPoolInstanceGroup copy = new KVPoolInstanceGroup();
        copy.setMetadata(meta("search-copy"));
        copy.setSpec(new KVPoolInstanceGroup.Spec());
        copy.getSpec().pool = POOL;
        copy.getSpec().name = "search";
        copy.getSpec().quotaBytes = 4_000_000L;
        copy.getSpec().storageCandidates = List.of("nfs_01");
        client.resource(copy).create();
        Condition taken = awaitCondition(KVPoolInstanceGroup.class, "search-copy", Condition.Status.False, "Refused");
        assertTrue(taken.message.contains("already managed by KVPoolInstanceGroup search"), taken.message);
        assertEquals(3_000_000L, quota(cp));
        client.resources(KVPoolInstanceGroup.class).inNamespace(NS).withName("search-copy").delete();
        until("search-copy gone",
                () -> client.resources(KVPoolInstanceGroup.class).inNamespace(NS).withName("search-copy").get() == null);
        assertEquals(200, cp.get("/api/v1/instance-groups/search").status());

        // --- an object nobody manages is left alone (never read, changed or deleted)
        ObjectNode other = ControlPlaneApi.JSON.createObjectNode().put("name", "console-made").put("quotaBytes", 5L);
        other.putArray("storageCandidates").add("nfs_01");
        assertEquals(201, cp.post("/api/v1/instance-groups", other).status());

        // --- delete all three at once: the control plane refuses the group while the tenant is bound to it and the
        // storage while the group lists it; retries converge, and every finalizer is removed
        client.resources(KVPoolTenant.class).inNamespace(NS).withName("team-a").delete();
        client.resources(KVPoolInstanceGroup.class).inNamespace(NS).withName("search").delete();
        client.resources(KVPoolStorage.class).inNamespace(NS).withName("nfs-01").delete();
        until("account deleted", () -> cp.get("/api/v1/accounts/team-a").status() == 404);
        until("tenant resource gone",
                () -> client.resources(KVPoolTenant.class).inNamespace(NS).withName("team-a").get() == null);
        until("group deleted", () -> cp.get("/api/v1/instance-groups/search").status() == 404);
        until("group resource gone",
                () -> client.resources(KVPoolInstanceGroup.class).inNamespace(NS).withName("search").get() == null);
        // the storage is still listed by the unmanaged group: deletion is refused and reported, never forced
        awaitEvent("nfs-01", "DeleteRefused", "HTTP 409");
        assertEquals(200, cp.get("/api/v1/storages/nfs_01").status());
        assertEquals(200, cp.get("/api/v1/instance-groups/console-made").status());
        ControlPlaneApi.Reply cm = cp.get("/api/v1/instance-groups/console-made");
        assertEquals(204, cp.delete("/api/v1/instance-groups/console-made").status(), cm.detail());
        until("storage deleted", () -> cp.get("/api/v1/storages/nfs_01").status() == 404);
        until("storage resource gone",
                () -> client.resources(KVPoolStorage.class).inNamespace(NS).withName("nfs-01").get() == null);
    }

    @Test
    void aPoolThatIsGoneDoesNotBlockDeletion() throws Exception {
        ControlPlaneApi cp = admin();
        KVPoolStorage missing = storage("lost", "no-such-pool", "lost_01");
        client.resource(missing).create();
        Condition c = awaitCondition(KVPoolStorage.class, "lost", Condition.Status.False, "PoolNotFound");
        assertTrue(c.message.contains("KVPool 'no-such-pool' does not exist"), c.message);

        // a pool whose resource is deleted (its control plane goes with it): the finalizer is dropped without a call
        createPool("gone");
        client.resource(storage("orphan", "gone", "orphan_01")).create();
        awaitReady(KVPoolStorage.class, "orphan", x -> true);
        assertEquals(200, cp.get("/api/v1/storages/orphan_01").status());
        client.resources(KVPool.class).inNamespace(NS).withName("gone").delete();
        until("KVPool gone", () -> client.resources(KVPool.class).inNamespace(NS).withName("gone").get() == null);
        client.resources(KVPoolStorage.class).inNamespace(NS).withName("orphan").delete();
        until("orphan resource gone",
                () -> client.resources(KVPoolStorage.class).inNamespace(NS).withName("orphan").get() == null);
        // (this test's control plane outlives the pool, which shows that no DELETE was sent)
        assertEquals(200, cp.get("/api/v1/storages/orphan_01").status());
        assertEquals(204, cp.delete("/api/v1/storages/orphan_01").status());

        client.resources(KVPoolStorage.class).inNamespace(NS).withName("lost").delete();
        until("lost resource gone",
                () -> client.resources(KVPoolStorage.class).inNamespace(NS).withName("lost").get() == null);
    }

    @Test
    void theServicesAccountAppearsOnceTheControlPlaneRunsAndItsPasswordIsPutBack() throws Exception {
        ControlPlaneApi cp = admin();
        createPool("svc");
        var secret = await("services Secret", () -> client.secrets().inNamespace(NS).withName("svc-metadata-plane-account").get());
        String user = dev.kvpool.operator.controlplane.ControlPlanes.value(secret, PoolSecrets.USERNAME_KEY);
        String password = dev.kvpool.operator.controlplane.ControlPlanes.value(secret, PoolSecrets.PASSWORD_KEY);
        assertEquals(KVPoolReconciler.SERVICES_USER, user);
        assertEquals(404, cp.get("/api/v1/accounts/" + user).status(), "not before the control plane runs");

        // play the kubelet: the control plane's pod is ready, so the operator creates the account
        markControlPlaneReady("svc");
        until(() -> "services account created; pool status: " + poolConditions("svc"), () -> servicesCanLogIn(user, password));
        assertEquals("operator", cp.get("/api/v1/accounts/" + user).body().path("role").asText());

        // someone changes its password in the console: the next reconcile puts the Secret's back
        var r = cp.get("/api/v1/accounts/" + user);
        assertEquals(200, cp.put("/api/v1/accounts/" + user, r.etag(),
                ControlPlaneApi.JSON.createObjectNode().put("password", "Someone-Else-Chose-9")).status());
        assertFalse(servicesCanLogIn(user, password));
        markControlPlaneReady("svc"); // any change of an owned workload wakes the reconciler
        until(() -> "services password put back; pool status: " + poolConditions("svc"), () -> servicesCanLogIn(user, password));

        // the metadata plane's replicas are ready too: the pool is Ready, with its versions and a Normal event
        markReady("svc-metadata-plane");
        var agents = await("agents", () -> client.apps().daemonSets().inNamespace(NS).withName("svc-data-agent").get());
        agents.setStatus(new io.fabric8.kubernetes.api.model.apps.DaemonSetStatusBuilder()
                .withObservedGeneration(agents.getMetadata().getGeneration()).withDesiredNumberScheduled(2)
                .withCurrentNumberScheduled(2).withUpdatedNumberScheduled(2).withNumberReady(2).withNumberAvailable(2)
                .build());
        client.resource(agents).updateStatus();
        KVPool pool = await("pool ready", () -> {
            KVPool p = client.resources(KVPool.class).inNamespace(NS).withName("svc").get();
            return p.getStatus() != null && p.getStatus().conditions.stream().anyMatch(c ->
                    c.type == Condition.Type.Ready && c.status == Condition.Status.True) ? p : null;
        });
        assertTrue(pool.getStatus().conditions.stream().noneMatch(c -> c.type == Condition.Type.Degraded
                && c.status == Condition.Status.True));
        assertEquals("0.4.2", pool.getStatus().versions.controlPlane);
        assertEquals("0.4.2", pool.getStatus().versions.metadataPlane);
        await("Ready event", () -> client.v1().events().inNamespace(NS).list().getItems().stream()
                .filter(e -> "svc".equals(e.getInvolvedObject().getName()) && "Ready".equals(e.getReason()))
                .findFirst().orElse(null));
    }

    /** The operator role reads the services list (the metadata plane's and agents' own calls need the same role). */
    boolean servicesCanLogIn(String user, String password) {
        try {
            return new ControlPlaneApi(ControlPlaneProcess.url, user, password, Duration.ofSeconds(10))
                    .get("/api/v1/services").status() == 200;
        } catch (IOException e) {
            return false;
        }
    }

    String poolConditions(String pool) {
        KVPool p = client.resources(KVPool.class).inNamespace(NS).withName(pool).get();
        return p.getStatus() == null ? "none" : p.getStatus().conditions.stream()
                .map(c -> c.type + "=" + c.status + " " + c.reason + ": " + c.message).toList().toString();
    }

    static void until(Supplier<String> what, Probe p) {
        long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
        while (System.nanoTime() < deadline) {
            try {
                if (p.test()) {
                    return;
                }
            } catch (Exception e) {
                // not yet
            }
            try {
                Thread.sleep(200);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                break;
            }
        }
        fail("timed out waiting for " + what.get());
    }

    void markControlPlaneReady(String pool) {
        markReady(pool + "-control-plane");
    }

    void markReady(String deployment) {
        var d = await(deployment, () -> client.apps().deployments().inNamespace(NS).withName(deployment).get());
        int n = d.getSpec().getReplicas() == null ? 1 : d.getSpec().getReplicas();
        d.setStatus(new io.fabric8.kubernetes.api.model.apps.DeploymentStatusBuilder()
                .withReplicas(n).withUpdatedReplicas(n)
                .withReadyReplicas(n).withAvailableReplicas(n)
                .withObservedGeneration(d.getMetadata().getGeneration() == null ? 1L : d.getMetadata().getGeneration())
                .addNewCondition().withType("Available").withStatus("True").withReason("Marked-" + System.nanoTime())
                .endCondition().build());
        client.resource(d).updateStatus();
    }

    static KVPoolStorage storage(String name, String pool, String cpName) throws IOException {
        KVPoolStorage s = new KVPoolStorage();
        s.setMetadata(meta(name));
        s.setSpec(new KVPoolStorage.Spec());
        s.getSpec().pool = pool;
        s.getSpec().name = cpName;
        s.getSpec().type = "nfs";
        s.getSpec().spec = ControlPlaneApi.JSON.readTree("{\"root_path\":\"/mnt/" + name + "/\"}");
        return s;
    }

    // ---------------------------------------------------------------------------------------------- helpers

    void createPool(String name) {
        // the KVPool reconciler generates this Secret when it is missing and keeps an existing one: written first,
        // it holds the password the test's control plane was started with
        client.resource(new SecretBuilder().withMetadata(meta(PoolSecrets.adminSecretName(name)))
                .addToStringData(PoolSecrets.USERNAME_KEY, ControlPlaneProcess.ADMIN_USER)
                .addToStringData(PoolSecrets.PASSWORD_KEY, ControlPlaneProcess.ADMIN_PASSWORD).build()).create();
        KVPool pool = new KVPool();
        pool.setMetadata(meta(name));
        KVPoolSpec spec = new KVPoolSpec();
        spec.version = "0.4.2";
        spec.engines = new KVPoolSpec.Engines();
        spec.engines.postgres = new KVPoolSpec.Postgres();
        spec.engines.postgres.secretRef = new SecretRef("demo-db");
        pool.setSpec(spec);
        client.resource(pool).create();
    }

    static io.fabric8.kubernetes.api.model.ObjectMeta meta(String name) {
        return new ObjectMetaBuilder().withName(name).withNamespace(NS).build();
    }

    long quota(ControlPlaneApi cp) throws IOException {
        return cp.get("/api/v1/instance-groups/search").body().get("quotaBytes").asLong();
    }

    boolean canLogIn(String user, String password) {
        try {
            return new ControlPlaneApi(ControlPlaneProcess.url, user, password, Duration.ofSeconds(10))
                    .get("/api/v1/instance-groups/search").status() == 200;
        } catch (IOException e) {
            return false;
        }
    }

    /** As kubectl edit: read, change, write; the operator may have written status or a finalizer in between. */
    <R extends CustomResource<?, ?>> void edit(Class<R> type, String name, java.util.function.Consumer<R> change) {
        for (int attempt = 1; ; attempt++) {
            try {
                client.resources(type).inNamespace(NS).withName(name).edit(r -> {
                    change.accept(r);
                    return r;
                });
                return;
            } catch (io.fabric8.kubernetes.client.KubernetesClientException e) {
                if (e.getCode() != 409 || attempt == 10) {
                    throw e;
                }
            }
        }
    }

    /** One failed test must not leave the operator cut off from the control plane for the next ones. */
    @org.junit.jupiter.api.AfterEach
    void reconnectTheOperator() {
        ControlPlaneProcess.operatorPath.switchTo(ControlPlaneProcess.httpPort);
    }

    <R extends CustomResource<?, ? extends ControlPlaneObjectStatus>> R awaitStatus(Class<R> type, String name,
                                                                                  Predicate<R> p) {
        return await(type.getSimpleName() + " " + name, () -> {
            R r = client.resources(type).inNamespace(NS).withName(name).get();
            return r != null && r.getStatus() != null && p.test(r) ? r : null;
        });
    }

    /** Ready=True for the current generation, with a control-plane version, and {@code p}. */
    <R extends CustomResource<?, ? extends ControlPlaneObjectStatus>> R awaitReady(Class<R> type, String name,
                                                                                 Predicate<R> p) {
        R r = awaitStatus(type, name, x -> x.getStatus().controlPlaneVersion != null
                && x.getMetadata().getGeneration().equals(x.getStatus().observedGeneration)
                && ready(x) != null && ready(x).status == Condition.Status.True && p.test(x));
        assertNotNull(ready(r).lastTransitionTime);
        return r;
    }

    <R extends CustomResource<?, ? extends ControlPlaneObjectStatus>> Condition awaitCondition(
            Class<R> type, String name, Condition.Status status, String reason) {
        R r = awaitStatus(type, name, x -> x.getMetadata().getGeneration().equals(x.getStatus().observedGeneration)
                && ready(x) != null && ready(x).status == status && reason.equals(ready(x).reason));
        return ready(r);
    }

    static Condition ready(CustomResource<?, ? extends ControlPlaneObjectStatus> r) {
        return r.getStatus().conditions.stream().filter(c -> c.type == Condition.Type.Ready).findFirst().orElse(null);
    }

    Event awaitEvent(String object, String reason, String text) {
        return await("event " + reason + " on " + object + " containing '" + text + "'",
                () -> client.v1().events().inNamespace(NS).list().getItems().stream()
                        .filter(e -> object.equals(e.getInvolvedObject().getName()) && reason.equals(e.getReason())
                                && e.getMessage().contains(text)).findFirst().orElse(null));
    }

    interface Probe {
        boolean test() throws Exception;
    }

    static void until(String what, Probe p) {
        await(what, () -> {
            try {
                return p.test() ? Boolean.TRUE : null;
            } catch (Exception e) {
                return null;
            }
        });
    }

    static <T> T await(String what, Supplier<T> probe) {
        long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
        while (System.nanoTime() < deadline) {
            T t = probe.get();
            if (t != null) {
                return t;
            }
            try {
                Thread.sleep(200);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                break;
            }
        }
        return fail("timed out waiting for " + what);
    }

}
