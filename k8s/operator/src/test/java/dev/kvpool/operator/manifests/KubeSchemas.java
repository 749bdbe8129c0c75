package dev.kvpool.operator.manifests;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.networknt.schema.JsonSchema;
import com.networknt.schema.JsonSchemaFactory;
import com.networknt.schema.SpecVersion;
import com.networknt.schema.ValidationMessage;
import dev.cel.common.CelAbstractSyntaxTree;
import dev.cel.common.types.SimpleType;
import dev.cel.compiler.CelCompiler;
import dev.cel.compiler.CelCompilerFactory;
import dev.cel.parser.CelStandardMacro;
import dev.cel.runtime.CelRuntime;
import dev.cel.runtime.CelRuntimeFactory;
import java.util.LinkedHashMap;
import java.io.IOException;
import java.io.InputStream;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeSet;

/**
 * Offline schema validation of Kubernetes objects, as strict as {@code kubectl apply} against a real API server where
 * JSON Schema can express it:
 * <ul>
 * <li>built-in kinds (and prometheus-operator's ServiceMonitor/PrometheusRule) against the Kubernetes OpenAPI
 * definitions fabric8 ships in {@code io.fabric8:kubernetes-model-validator} ({@value #K8S_DEFINITIONS});</li>
 * <li>custom kinds against the {@code openAPIV3Schema} of their CustomResourceDefinition, and their metadata against
 * ObjectMeta.</li>
 * </ul>
 * Unknown fields are errors (kubectl's default {@code --validate=strict}): every object schema with properties gets
 * {@code additionalProperties: false} unless it preserves unknown fields. Int-or-string and Quantity accept what the
 * API server accepts. The CRDs' CEL rules ({@code x-kubernetes-validations}) are evaluated with CEL for Java, with
 * {@code self} bound to the value at the rule's place (no {@code oldSelf}: transition rules cannot be checked without
 * a previous object). Not checked: formats other than date-time, defaulting, immutability, and anything only admission
 * or a controller decides.
 */
final class KubeSchemas {
    static final String K8S_DEFINITIONS = "/openshift-generated.json";
    private static final String QUANTITY = "io.k8s.apimachinery.pkg.api.resource.Quantity";
    private static final String OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";
    private static final JsonNodeFactory F = JsonNodeFactory.instance;
    /** The schema keywords kept; descriptions, defaults, examples and extensions are dropped. */
    private static final Set<String> KEPT = Set.of("type", "required", "enum", "pattern", "minimum", "maximum",
            "exclusiveMinimum", "exclusiveMaximum", "minLength", "maxLength", "minItems", "maxItems", "uniqueItems",
            "minProperties", "maxProperties", "$ref");

    private final ObjectNode definitions;
    private final JsonSchemaFactory factory = JsonSchemaFactory.getInstance(SpecVersion.VersionFlag.V7);
    private final Map<String, JsonSchema> compiled = new HashMap<>();
    /** "group/version/Kind" of each custom kind, to its converted openAPIV3Schema. */
    private final Map<String, JsonNode> crdSchemas = new HashMap<>();
    /** The same kinds' original openAPIV3Schema, whose x-kubernetes-validations hold the CEL rules. */
    private final Map<String, JsonNode> crdRules = new HashMap<>();
    private static final CelCompiler CEL = CelCompilerFactory.standardCelCompilerBuilder()
            .setStandardMacros(CelStandardMacro.STANDARD_MACROS) // has(), all(), exists(), ...
            .addVar("self", SimpleType.DYN).build();
    private static final CelRuntime CEL_RUNTIME = CelRuntimeFactory.standardCelRuntimeBuilder().build();
    private final Map<String, CelRuntime.Program> programs = new HashMap<>();

    private KubeSchemas(ObjectNode definitions) {
        this.definitions = definitions;
    }

    /** What one object's validation found. */
    record Result(String object, boolean checked, String against, List<String> errors) {
    }

    static KubeSchemas load() throws IOException {
        JsonNode doc;
        try (InputStream in = KubeSchemas.class.getResourceAsStream(K8S_DEFINITIONS)) {
            Objects.requireNonNull(in, K8S_DEFINITIONS + " is not on the test classpath (io.fabric8:kubernetes-model-validator)");
            doc = new ObjectMapper().readTree(in);
        }
        ObjectNode defs = F.objectNode();
        for (Iterator<Map.Entry<String, JsonNode>> it = doc.path("definitions").fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> e = it.next();
            defs.set(e.getKey(), schema(e.getValue()));
        }
        if (defs.size() < 1000 || !defs.has("io.k8s.api.apps.v1.Deployment")) {
            throw new IOException(K8S_DEFINITIONS + " does not hold the Kubernetes definitions (" + defs.size() + ")");
        }
        // the API server takes a number where a quantity is expected (replicas: 1, cpu: 2)
        defs.set(QUANTITY, anyOf("string", "number"));
        return new KubeSchemas(defs);
    }

    /** Adds the custom kinds of a CustomResourceDefinition; returns problems with the CRD itself. */
    List<String> addCrd(JsonNode crd) {
        List<String> errors = new ArrayList<>();
        String group = crd.path("spec").path("group").asText("");
        String kind = crd.path("spec").path("names").path("kind").asText("");
        if (group.isEmpty() || kind.isEmpty()) {
            errors.add("CustomResourceDefinition without spec.group or spec.names.kind");
            return errors;
        }
        for (JsonNode v : crd.path("spec").path("versions")) {
            JsonNode s = v.path("schema").path("openAPIV3Schema");
            if (!s.isObject()) {
                errors.add(kind + " " + v.path("name").asText() + ": no openAPIV3Schema");
                continue;
            }
            ObjectNode converted = (ObjectNode) schema(s);
            // the API server adds these to every custom resource's root; generated schemas leave them out
            ObjectNode props = converted.has("properties") ? (ObjectNode) converted.get("properties") : F.objectNode();
            props.putIfAbsent("apiVersion", F.objectNode().put("type", "string"));
            props.putIfAbsent("kind", F.objectNode().put("type", "string"));
            props.putIfAbsent("metadata", F.objectNode().put("type", "object"));
            converted.set("properties", props);
            try {
                factory.getSchema(converted).initializeValidators();
            } catch (RuntimeException e) {
                errors.add(kind + " " + v.path("name").asText() + ": schema does not compile: " + e.getMessage());
                continue;
            }
            crdSchemas.put(group + "/" + v.path("name").asText() + "/" + kind, converted);
            crdRules.put(group + "/" + v.path("name").asText() + "/" + kind, s);
        }
        return errors;
    }

    Result validate(JsonNode object) {
        String apiVersion = object.path("apiVersion").asText("");
        String kind = object.path("kind").asText("");
        String name = object.path("metadata").path("name").asText("");
        String id = kind + "/" + name + " (" + apiVersion + ")";
        List<String> errors = new ArrayList<>();
        if (apiVersion.isEmpty() || kind.isEmpty() || name.isEmpty()) {
            errors.add("apiVersion, kind and metadata.name are required");
            return new Result(id, true, "-", errors);
        }
        String customKey = (apiVersion.contains("/") ? apiVersion : "/" + apiVersion) + "/" + kind;
        JsonNode crdSchema = crdSchemas.get(customKey);
        if (crdSchema != null) {
            errors.addAll(run(compiled.computeIfAbsent("crd:" + customKey, k -> factory.getSchema(crdSchema)), object));
            errors.addAll(run(definition(OBJECT_META), object.path("metadata")).stream()
                    .map(m -> m.replaceFirst("^\\$", "\\$.metadata")).toList());
            errors.addAll(cel(crdRules.get(customKey), object, "$"));
            return new Result(id, true, "CRD " + customKey, errors);
        }
        if ("apiextensions.k8s.io/v1".equals(apiVersion) && "CustomResourceDefinition".equals(kind)) {
            errors.addAll(addCrd(object)); // not in fabric8's definitions: checked by compiling its schemas
            return new Result(id, true, "its schemas compile", errors);
        }
        String key = definitionKey(apiVersion, kind);
        if (!definitions.has(key)) {
            return new Result(id, false, "none", List.of("no schema for " + apiVersion + " " + kind));
        }
        errors.addAll(run(definition(key), object));
        return new Result(id, true, key, errors);
    }

    /** Evaluates every CEL rule of the schema tree where the object has a value. */
    private List<String> cel(JsonNode schema, JsonNode value, String path) {
        List<String> errors = new ArrayList<>();
        if (schema == null || value == null || value.isMissingNode() || value.isNull()) {
            return errors;
        }
        for (JsonNode rule : schema.path("x-kubernetes-validations")) {
            String expr = rule.path("rule").asText();
            String message = rule.path("message").asText("failed rule: " + expr);
            if (expr.contains("oldSelf")) {
                continue; // a transition rule (e.g. an immutable field): the API server skips it on create, so do we
            }
            try {
                CelRuntime.Program program = programs.get(expr);
                if (program == null) {
                    CelAbstractSyntaxTree ast = CEL.compile(expr).getAst();
                    program = CEL_RUNTIME.createProgram(ast);
                    programs.put(expr, program);
                }
                Object result = program.eval(Map.of("self", celValue(value)));
                if (!Boolean.TRUE.equals(result)) {
                    errors.add(path + ": " + message + " (" + expr + ")");
                }
            } catch (Exception e) {
                errors.add(path + ": rule " + expr + " cannot be evaluated: " + e.getMessage());
            }
        }
        JsonNode props = schema.path("properties");
        if (value.isObject()) {
            for (Iterator<Map.Entry<String, JsonNode>> it = value.fields(); it.hasNext(); ) {
                Map.Entry<String, JsonNode> e = it.next();
                JsonNode sub = props.has(e.getKey()) ? props.get(e.getKey()) : schema.path("additionalProperties");
                if (sub.isObject()) {
                    errors.addAll(cel(sub, e.getValue(), path + "." + e.getKey()));
                }
            }
        } else if (value.isArray() && schema.path("items").isObject()) {
            for (int i = 0; i < value.size(); i++) {
                errors.addAll(cel(schema.get("items"), value.get(i), path + "[" + i + "]"));
            }
        }
        return errors;
    }

    /** JSON as CEL sees it: maps, lists, int (long), double, string, bool. */
    private static Object celValue(JsonNode n) {
        if (n.isObject()) {
            Map<String, Object> m = new LinkedHashMap<>();
            n.fields().forEachRemaining(e -> m.put(e.getKey(), celValue(e.getValue())));
            return m;
        }
        if (n.isArray()) {
            List<Object> l = new ArrayList<>();
            n.forEach(x -> l.add(celValue(x)));
            return l;
        }
        if (n.isIntegralNumber()) {
            return n.asLong();
        }
        if (n.isNumber()) {
            return n.asDouble();
        }
        if (n.isBoolean()) {
            return n.asBoolean();
        }
        if (n.isNull()) {
            return com.google.protobuf.NullValue.NULL_VALUE;
        }
        return n.asText();
    }

    private JsonSchema definition(String key) {
        return compiled.computeIfAbsent(key, k -> {
            ObjectNode root = F.objectNode();
            root.put("$schema", "http://json-schema.org/draft-07/schema#");
            root.set("definitions", definitions);
            root.set("allOf", F.arrayNode().add(F.objectNode().put("$ref", "#/definitions/" + k)));
            return factory.getSchema(root);
        });
    }

    private static List<String> run(JsonSchema schema, JsonNode node) {
        Set<String> out = new TreeSet<>();
        for (ValidationMessage m : schema.validate(node)) {
            out.add(m.getMessage());
        }
        return new ArrayList<>(out);
    }

    /** Kubernetes' definition names: io.k8s.api.{core|apps|rbac|...}.{version}.{Kind}, others by reversed group. */
    static String definitionKey(String apiVersion, String kind) {
        int slash = apiVersion.indexOf('/');
        String group = slash < 0 ? "" : apiVersion.substring(0, slash);
        String version = apiVersion.substring(slash + 1);
        String prefix;
        if (group.isEmpty()) {
            prefix = "io.k8s.api.core";
        } else if (!group.contains(".")) {
            prefix = "io.k8s.api." + group;
        } else if (group.endsWith(".k8s.io")) {
            prefix = "io.k8s.api." + group.substring(0, group.indexOf('.'));
        } else {
            List<String> labels = new ArrayList<>(List.of(group.split("\\.")));
            java.util.Collections.reverse(labels);
            prefix = String.join(".", labels);
        }
        return prefix + "." + version + "." + kind;
    }

    /** An OpenAPI (v2 definition or CRD v3) schema as a strict draft-7 JSON Schema. */
    static JsonNode schema(JsonNode s) {
        if (!s.isObject()) {
            return s;
        }
        if ("int-or-string".equals(s.path("format").asText()) || s.path("x-kubernetes-int-or-string").asBoolean()) {
            return anyOf("integer", "string");
        }
        ObjectNode out = F.objectNode();
        for (Iterator<Map.Entry<String, JsonNode>> it = s.fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> e = it.next();
            String k = e.getKey();
            JsonNode v = e.getValue();
            switch (k) {
                case "$ref" -> out.put("$ref", v.asText().replace("#/components/schemas/", "#/definitions/"));
                case "properties" -> {
                    ObjectNode props = F.objectNode();
                    v.fields().forEachRemaining(p -> props.set(p.getKey(), schema(p.getValue())));
                    out.set("properties", props);
                }
                case "items", "not" -> out.set(k, schema(v));
                case "additionalProperties" -> out.set(k, v.isObject() ? schema(v) : v);
                case "allOf", "anyOf", "oneOf" -> {
                    ArrayNode a = F.arrayNode();
                    v.forEach(x -> a.add(schema(x)));
                    out.set(k, a);
                }
                case "format" -> {
                    if ("date-time".equals(v.asText())) {
                        out.set(k, v);
                    }
                }
                default -> {
                    if (KEPT.contains(k)) {
                        out.set(k, v);
                    }
                }
            }
        }
        if (s.path("nullable").asBoolean() && out.path("type").isTextual()) {
            out.set("type", F.arrayNode().add(out.get("type").asText()).add("null"));
        }
        boolean open = s.path("x-kubernetes-preserve-unknown-fields").asBoolean();
        if (out.has("properties") && !out.has("additionalProperties") && !open) {
            out.put("additionalProperties", false);
        }
        return out;
    }

    private static ObjectNode anyOf(String... types) {
        ArrayNode a = F.arrayNode();
        for (String t : types) {
            a.add(F.objectNode().put("type", t));
        }
        return F.objectNode().set("anyOf", a);
    }
}
