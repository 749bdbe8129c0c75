package dev.kvpool.operator.reconciler;

import io.fabric8.kubernetes.api.model.EventBuilder;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.ObjectReferenceBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;
import java.time.Instant;
import org.jboss.logging.Logger;

/**
 * Kubernetes Events on the custom resources ({@code kubectl describe kvp demo} shows them): what the operator did or
 * was refused, next to the resource a user looks at. Callers emit on transitions only, so a resource that stays
 * broken does not flood the namespace. An Event that cannot be written is logged, never fails a reconcile.
 */
final class KubeEvents {
    private static final Logger LOG = Logger.getLogger(KubeEvents.class);
    static final String COMPONENT = "kvpool-operator";
    /** The API server refuses longer event messages (1 KiB note limit of events.k8s.io); keep well inside. */
    static final int MAX_MESSAGE = 1000;

    /** The operator's pod (HOSTNAME), so events from a new leader are told apart. */
    static final String INSTANCE = System.getenv().getOrDefault("HOSTNAME", COMPONENT);

    private final KubernetesClient client;

    KubeEvents(KubernetesClient client) {
        this.client = client;
    }

    void normal(HasMetadata on, String reason, String message) {
        emit(on, "Normal", reason, message);
    }

    void warning(HasMetadata on, String reason, String message) {
        emit(on, "Warning", reason, message);
    }

    private void emit(HasMetadata on, String type, String reason, String message) {
        String now = Instant.now().toString();
        String text = message == null ? "" : message.length() > MAX_MESSAGE
                ? message.substring(0, MAX_MESSAGE - 1) + "…" : message;
        try {
            client.v1().events().inNamespace(on.getMetadata().getNamespace()).resource(new EventBuilder()
                    .withNewMetadata()
                        .withGenerateName(on.getMetadata().getName() + ".")
                        .withNamespace(on.getMetadata().getNamespace())
                    .endMetadata()
                    .withInvolvedObject(new ObjectReferenceBuilder()
                            .withApiVersion(on.getApiVersion()).withKind(on.getKind())
                            .withName(on.getMetadata().getName()).withNamespace(on.getMetadata().getNamespace())
                            .withUid(on.getMetadata().getUid()).build())
                    .withType(type).withReason(reason).withMessage(text)
                    .withFirstTimestamp(now).withLastTimestamp(now).withCount(1)
                    .withNewSource().withComponent(COMPONENT).endSource()
                    .withReportingComponent(COMPONENT).withReportingInstance(INSTANCE)
                    .build()).create();
        } catch (KubernetesClientException e) {
            LOG.warnf("could not record event %s on %s %s: %s", reason, on.getKind(), on.getMetadata().getName(),
                    e.getMessage());
        }
    }
}
