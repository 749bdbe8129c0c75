package dev.kvpool.operator.config;

import io.javaoperatorsdk.operator.api.config.LeaderElectionConfiguration;
import io.quarkus.arc.Unremovable;
import jakarta.inject.Singleton;

/**
 * Turns on JOSDK's leader election (QOSDK looks this bean up in the profiles of
 * {@code quarkus.operator-sdk.activate-leader-election-for-profiles}, i.e. prod): only the holder of the Lease
 * {@value #LEASE} reconciles, so a rolling update never runs two operators at once. The Lease lives in the
 * operator's own namespace (no namespace given: JOSDK takes the client's), and its RBAC comes from the
 * {@code quarkus.kubernetes.rbac.roles.kvpool-operator-leader-election} rules in application.properties.
 */
@Singleton
@Unremovable // looked up by QOSDK at start, injected nowhere
public class LeaderElection extends LeaderElectionConfiguration {
    public static final String LEASE = "kvpool-operator";

    public LeaderElection() {
        super(LEASE);
    }
}
