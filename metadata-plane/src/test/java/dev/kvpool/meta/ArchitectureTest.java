package dev.kvpool.meta;

import static com.tngtech.archunit.base.DescribedPredicate.describe;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static com.tngtech.archunit.library.dependencies.SlicesRuleDefinition.slices;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.tngtech.archunit.base.DescribedPredicate;
import com.tngtech.archunit.core.domain.JavaClass;
import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * The metadata plane's shape, checked on its compiled classes (issue 35 item 2): no two of its packages depend on
 * each other, and the domain knows no KVCM wire type. The exceptions below are the known debts, each named class by
 * class so that any new cycle or new wire dependency fails; remove an entry when its debt is paid.
 */
class ArchitectureTest {
    private static final JavaClasses PLANE = new ClassFileImporter()
            .withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
            .importPackages("dev.kvpool.meta");

    /** The packages that hold the plane's logic; only the adapters (kvcm, engine.report, rest, ...) speak the wire. */
    private static final String[] DOMAIN = {"dev.kvpool.meta.core..", "dev.kvpool.meta.registry..",
            "dev.kvpool.meta.write..", "dev.kvpool.meta.query..", "dev.kvpool.meta.reclaim..",
            "dev.kvpool.meta.config..", "dev.kvpool.meta.quota..", "dev.kvpool.meta.storage..",
            "dev.kvpool.meta.ha..", "dev.kvpool.meta.slots..", "dev.kvpool.meta.backend..", "dev.kvpool.meta.index..",
            "dev.kvpool.meta.store..", "dev.kvpool.meta.stats..", "dev.kvpool.meta.sim..",
            "dev.kvpool.meta.whatif..", "dev.kvpool.meta.events.."};

    /**
     * To remove: dependencies that close a cycle today (none left: a group's reclaim strategy now lives with the
     * group in registry, and the registry starts from its own Registry.Initial). Add none.
     */
    private static final String[][] CYCLE_DEBTS = {};

    /**
     * To remove: domain classes that still take or build KVCM proto messages (an instance is registered from its
     * RegisterInstanceRequest and keeps its InstanceInfo; reads render CacheLocation messages and JSON straight from
     * the index words, the measured hot path;). Each is a top-level class;
     * a new class that needs the wire belongs in an adapter.
     */
    private static final Set<String> WIRE_DEBTS = Set.of(
            "dev.kvpool.meta.registry.Registry",
            "dev.kvpool.meta.registry.Instance",
            "dev.kvpool.meta.registry.JsonLocations",
            "dev.kvpool.meta.registry.LocationSink",
            "dev.kvpool.meta.registry.Locations",
            "dev.kvpool.meta.query.QueryPath",
            "dev.kvpool.meta.write.WritePath",
            "dev.kvpool.meta.config.ControlPlaneSync",
            "dev.kvpool.meta.config.ConfigViews", // builds an instance's InstanceInfo from the control plane's view
            "dev.kvpool.meta.config.InstanceRegistration", // registers from a RegisterInstanceRequest
            "dev.kvpool.meta.sim.TraceSimulation");

    @Test
    void packagesAreFreeOfCycles() {
        var rule = slices().matching("dev.kvpool.meta.(*)..").should().beFreeOfCycles();
        for (String[] debt : CYCLE_DEBTS) {
            rule = rule.ignoreDependency(classOrNested(debt[0]), classOrNested(debt[1]));
        }
        rule.check(PLANE);
    }

    @Test
    void theDomainKnowsNoKvcmWire() {
        DescribedPredicate<JavaClass> owed = describe("owes it (WIRE_DEBTS)",
                c -> WIRE_DEBTS.contains(topLevel(c)));
        noClasses().that().resideInAnyPackage(DOMAIN).and(DescribedPredicate.not(owed))
                .should().dependOnClassesThat().resideInAnyPackage("dev.kvpool.api.proto..", "dev.kvpool.meta.kvcm..")
                .check(PLANE);
    }

    /** The packages of the backends (their own modules); the plane reaches them only through dev.kvpool.meta.backend. */
    private static final String[] BACKENDS = {"dev.kvpool.meta.store.embedded..", "dev.kvpool.meta.store.redis.."};

    @Test
    void thePlaneKnowsNoBackendButThroughTheContract() {
        // a new storage kind is a new module and a config value: nothing in the plane names a kind's classes (no
        // casts, no instanceof). The what-if simulator is the one exception: it replays traces on an in-memory
        // embedded index of its own, not on the plane's store.
        noClasses().that().resideOutsideOfPackages(BACKENDS)
                .and(DescribedPredicate.not(classOrNested("dev.kvpool.meta.sim.TraceSimulation")))
                .should().dependOnClassesThat().resideInAnyPackage(BACKENDS)
                .check(PLANE);
    }

    @Test
    void theDomainThrowsNoKvcmError() {
        // the domain's refusals are core.MetaException; the kvcm package maps them (KvcmCodes)
        noClasses().that().resideInAnyPackage(DOMAIN)
                .should().dependOnClassesThat().resideInAnyPackage("dev.kvpool.meta.kvcm..")
                .check(PLANE);
    }

    @Test
    void everyWireDebtIsStillOwed() {
        // a paid debt leaves the list, so that the class cannot fall back into the wire unnoticed
        for (String owed : WIRE_DEBTS) {
            boolean wire = PLANE.stream().filter(c -> topLevel(c).equals(owed))
                    .flatMap(c -> c.getDirectDependenciesFromSelf().stream())
                    .map(d -> d.getTargetClass().getPackageName())
                    .anyMatch(p -> p.startsWith("dev.kvpool.api.proto") || p.startsWith("dev.kvpool.meta.kvcm"));
            assertTrue(wire, owed + " no longer depends on the wire: remove it from WIRE_DEBTS");
        }
    }

    private static DescribedPredicate<JavaClass> classOrNested(String name) {
        return describe(name, c -> c.getName().equals(name) || c.getName().startsWith(name + "$"));
    }

    private static String topLevel(JavaClass c) {
        int i = c.getName().indexOf('$');
        return i < 0 ? c.getName() : c.getName().substring(0, i);
    }
}
