package dev.kvpool.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.kvpool.agent.io.uring.Libc;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.lang.classfile.ClassFile;
import java.lang.classfile.ClassModel;
import java.lang.classfile.MethodModel;
import java.lang.classfile.constantpool.ClassEntry;
import java.lang.classfile.constantpool.MemberRefEntry;
import java.lang.classfile.constantpool.PoolEntry;
import java.lang.classfile.instruction.InvokeInstruction;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.function.BiConsumer;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import java.util.zip.ZipFile;
import jcuda.JCudaVersion;
import jcuda.LibUtils;
import org.junit.jupiter.api.Test;

/**
 * The native image's reachability metadata ({@code META-INF/native-image/dev.kvpool/kvpool-data-agent/
 * reachability-metadata.json}) and run-time initialized classes against what the agent really does. A native image
 * fails at run time, not at build time, on a downcall or a JNI lookup it was not told about, and no native-image
 * builder exists on these machines: these checks are what stands between a new downcall and a broken binary.
 */
class NativeImageMetadataTest {
    static final String METADATA = "META-INF/native-image/dev.kvpool/kvpool-data-agent/reachability-metadata.json";
    static final String LINKER = "java/lang/foreign/Linker";

    record Downcall(FunctionDescriptor descriptor, int firstVariadicArg, boolean captureCallState) {
    }

    static JsonNode metadata() throws IOException {
        try (InputStream in = NativeImageMetadataTest.class.getClassLoader().getResourceAsStream(METADATA)) {
            assertNotNull(in, METADATA + " is not on the class path");
            return new ObjectMapper().readTree(in);
        }
    }

    // ---------------------------------------------------------------------------------------------------------
    // FFM downcalls

    @Test
    void everyDowncallOfLibcIsRegisteredAndNothingElse() throws IOException {
        List<Downcall> registered = new ArrayList<>();
        for (JsonNode d : metadata().path("foreign").path("downcalls")) {
            registered.add(parseDowncall(d));
        }
        assertEquals(registered.size(), new HashSet<>(registered).size(), "duplicate foreign.downcalls entries");
        assertTrue(metadata().path("foreign").path("upcalls").isEmpty(), "the agent makes no upcalls");

        Set<Downcall> declared = java.util.stream.Stream.concat(Libc.DOWNCALLS.stream(),
                        dev.kvpool.agent.io.gds.CuFile.DOWNCALLS.stream())
                .map(d -> new Downcall(d.descriptor(), d.firstVariadicArg(), d.captureErrno()))
                .collect(Collectors.toSet());
        Set<Downcall> missing = new HashSet<>(declared);
        registered.forEach(missing::remove);
        Set<Downcall> stale = new HashSet<>(registered);
        declared.forEach(stale::remove);
        assertTrue(missing.isEmpty(), () -> "downcalls of Libc.DOWNCALLS or CuFile.DOWNCALLS missing from " + METADATA
                + " (the native image would throw when binding them): " + missing);
        assertTrue(stale.isEmpty(), () -> "foreign.downcalls entries that no Libc or CuFile downcall uses: " + stale);
    }

    /** A downcall entry, read the way native-image reads it: C type names resolved through the canonical layouts. */
    static Downcall parseDowncall(JsonNode d) {
        Map<String, MemoryLayout> canonical = Linker.nativeLinker().canonicalLayouts();
        java.util.function.Function<String, MemoryLayout> type = name -> {
            MemoryLayout l = canonical.get(name);
            if (l == null) { // structs, unions, sequences: not used by the agent, so not read here either
                fail("foreign.downcalls: type '" + name + "' is not a canonical C type this test reads");
            }
            return l;
        };
        List<MemoryLayout> params = new ArrayList<>();
        d.path("parameterTypes").forEach(p -> params.add(type.apply(p.asText())));
        String ret = d.path("returnType").asText();
        FunctionDescriptor fd = ret.equals("void")
                ? FunctionDescriptor.ofVoid(params.toArray(MemoryLayout[]::new))
                : FunctionDescriptor.of(type.apply(ret), params.toArray(MemoryLayout[]::new));
        JsonNode o = d.path("options");
        o.fieldNames().forEachRemaining(k -> assertTrue(Set.of("firstVariadicArg", "captureCallState").contains(k),
                () -> "foreign.downcalls: option '" + k + "' is used by no Libc downcall"));
        return new Downcall(fd, o.has("firstVariadicArg") ? o.get("firstVariadicArg").asInt() : -1,
                o.path("captureCallState").asBoolean(false));
    }

    @Test
    void downcallHandlesAreMadeOnlyByLibcBind() {
        Map<String, List<String>> callers = new TreeMap<>();
        forEachAgentClass((name, cm) -> {
            for (MethodModel m : cm.methods()) {
                m.code().ifPresent(code -> code.forEach(e -> {
                    if (e instanceof InvokeInstruction i && i.owner().asInternalName().equals(LINKER)
                            && Set.of("downcallHandle", "upcallStub").contains(i.name().stringValue())) {
                        callers.computeIfAbsent(i.name().stringValue(), k -> new ArrayList<>())
                                .add(name + "." + m.methodName().stringValue());
                    }
                }));
            }
            // a method reference (Linker::downcallHandle) is no invoke instruction, but it is a pool entry
            if (!name.equals("dev/kvpool/agent/io/uring/Libc")) {
                for (PoolEntry p : cm.constantPool()) {
                    if (p instanceof MemberRefEntry r && r.owner().asInternalName().equals(LINKER)
                            && Set.of("downcallHandle", "upcallStub").contains(r.name().stringValue())) {
                        callers.computeIfAbsent(r.name().stringValue(), k -> new ArrayList<>()).add(name);
                    }
                }
            }
        });
        assertEquals(Map.of("downcallHandle", List.of("dev/kvpool/agent/io/uring/Libc.bind")), callers,
                "every FFM downcall goes through Libc.bind, whose descriptors (Libc.DOWNCALLS) the native image"
                        + " registers; declare new ones there and in " + METADATA);
    }

    // ---------------------------------------------------------------------------------------------------------
    // JCuda's JNI

    /** The JCuda natives JCuda's runtime class loads: what its {@code JCuda.initialize()} asks LibUtils for. */
    static String jcudaRuntimeResource() {
        return "lib/" + LibUtils.createLibraryFileName(LibUtils.createPlatformLibraryName("JCudaRuntime-" + JCudaVersion.get()));
    }

    /** The NUL-terminated printable strings of a native library: its JNI lookups name classes, fields, signatures. */
    static Set<String> strings(byte[] so) {
        Set<String> out = new HashSet<>();
        int start = 0;
        for (int i = 0; i < so.length; i++) {
            if (so[i] == 0) {
                if (i > start) {
                    out.add(new String(so, start, i - start, StandardCharsets.ISO_8859_1));
                }
                start = i + 1;
            } else if (so[i] < 0x20 || so[i] > 0x7e) {
                start = i + 1;
            }
        }
        return out;
    }

    static Set<String> libStrings() throws IOException {
        try (InputStream in = NativeImageMetadataTest.class.getClassLoader().getResourceAsStream(jcudaRuntimeResource())) {
            assertNotNull(in, jcudaRuntimeResource() + " (jcuda-natives) is not on the class path");
            return strings(in.readAllBytes());
        }
    }

    static Map<String, JsonNode> jniTypes() throws IOException {
        Map<String, JsonNode> out = new TreeMap<>();
        for (JsonNode r : metadata().path("reflection")) {
            if (r.path("jniAccessible").asBoolean(false)) {
                assertTrue(out.put(r.path("type").asText(), r) == null, "two JNI entries for " + r.path("type"));
            }
        }
        return out;
    }

    @Test
    void theAgentUsesOnlyJCudasRuntimeLibrary() {
        // jcuda.* and jcuda.runtime.* are served by libJCudaRuntime; jcuda.driver, jcuda.nvrtc, ... load other
        // natives whose JNI lookups are not in the metadata
        Set<String> others = new TreeSet<>();
        forEachAgentClass((name, cm) -> {
            for (PoolEntry p : cm.constantPool()) {
                if (p instanceof ClassEntry c) {
                    String n = c.asInternalName().replaceFirst("^\\[+L", "");
                    if (n.startsWith("jcuda/") && !n.matches("jcuda/[^/]+|jcuda/runtime/[^/]+")) {
                        others.add(name + " -> " + n);
                    }
                }
            }
        });
        assertTrue(others.isEmpty(), () -> "the agent uses JCuda libraries beyond the runtime; add their natives'"
                + " JNI lookups and resources to " + METADATA + ": " + others);
    }

    @Test
    void theJCudaNativesAreIncludedAsLoaded() throws IOException {
        List<String> globs = new ArrayList<>();
        metadata().path("resources").forEach(r -> globs.add(r.path("glob").asText()));
        assertEquals(List.of(jcudaRuntimeResource()), globs,
                "the resource JCuda extracts and loads at run time (the jcuda-natives version must match jcuda's)");
    }

    @Test
    void jniTypesAreTheClassesLibJCudaRuntimeLooksUp() throws IOException {
        Set<String> named = libStrings().stream().filter(s -> s.matches("(java|jcuda)/[A-Za-z0-9_/$]+"))
                .map(s -> s.replace('/', '.')).collect(Collectors.toCollection(TreeSet::new));
        assertTrue(named.contains("jcuda.runtime.cudaDeviceProp"), "the library's strings were not read: " + named);
        Set<String> missing = new TreeSet<>(named);
        missing.removeAll(jniTypes().keySet());
        Set<String> stale = new TreeSet<>(jniTypes().keySet());
        stale.removeAll(named);
        assertTrue(missing.isEmpty() && stale.isEmpty(), () -> METADATA + ": JNI types missing (named by "
                + jcudaRuntimeResource() + ": FindClass in JNI_OnLoad, ThrowNew): " + missing
                + "; JNI types the library does not name: " + stale);
    }

    @Test
    void jniFieldsAndMethodsExistAndAreLookedUpByTheLibrary() throws Exception {
        Set<String> lib = libStrings();
        List<String> wrong = new ArrayList<>();
        for (Map.Entry<String, JsonNode> t : jniTypes().entrySet()) {
            Class<?> c = Class.forName(t.getKey(), false, getClass().getClassLoader());
            Set<String> listed = new HashSet<>();
            for (JsonNode f : t.getValue().path("fields")) {
                String name = f.path("name").asText();
                listed.add(name);
                Field field;
                try {
                    field = c.getDeclaredField(name);
                } catch (NoSuchFieldException e) {
                    wrong.add(c.getName() + "." + name + ": no such field");
                    continue;
                }
                if (!lib.contains(name) || !lib.contains(descriptor(field.getType()))) {
                    wrong.add(c.getName() + "." + name + " " + descriptor(field.getType()) + ": not looked up by the library");
                }
            }
            for (JsonNode m : t.getValue().path("methods")) {
                String name = m.path("name").asText();
                List<Class<?>> params = new ArrayList<>();
                for (JsonNode p : m.path("parameterTypes")) {
                    params.add(type(p.asText()));
                }
                Class<?>[] ps = params.toArray(Class<?>[]::new);
                Class<?> ret;
                try {
                    ret = name.equals("<init>") ? void.class : c.getDeclaredMethod(name, ps).getReturnType();
                    if (name.equals("<init>")) {
                        c.getDeclaredConstructor(ps);
                    }
                } catch (NoSuchMethodException e) {
                    wrong.add(c.getName() + "." + name + params + ": no such method");
                    continue;
                }
                String desc = Stream.of(ps).map(NativeImageMetadataTest::descriptor).collect(Collectors.joining("", "(", ")"))
                        + descriptor(ret);
                // ThrowNew names no constructor: the VM calls the (String) one of the exception class
                boolean thrown = Throwable.class.isAssignableFrom(c) && desc.equals("(Ljava/lang/String;)V");
                if (!thrown && (!lib.contains(name) || !lib.contains(desc))) {
                    wrong.add(c.getName() + "." + name + desc + ": not looked up by the library");
                }
            }
            // JCuda's structs mirror C structs field by field: a field of theirs the library names but the entry
            // lacks is one JNI_OnLoad asks for (e.g. after a JCuda upgrade) and would fail the library's loading
            if (c.getName().startsWith("jcuda.")) {
                for (Field f : c.getDeclaredFields()) {
                    if (!Modifier.isStatic(f.getModifiers()) && lib.contains(f.getName()) && !listed.contains(f.getName())
                            && lib.contains(descriptor(f.getType()))) {
                        wrong.add(c.getName() + "." + f.getName() + ": named by the library, missing from the entry");
                    }
                }
            }
        }
        assertTrue(wrong.isEmpty(), () -> METADATA + " JNI entries:\n" + String.join("\n", wrong));
    }

    static Class<?> type(String name) throws ClassNotFoundException {
        return switch (name) {
            case "boolean" -> boolean.class;
            case "byte" -> byte.class;
            case "char" -> char.class;
            case "short" -> short.class;
            case "int" -> int.class;
            case "long" -> long.class;
            case "float" -> float.class;
            case "double" -> double.class;
            default -> name.endsWith("[]") ? type(name.substring(0, name.length() - 2)).arrayType()
                    : Class.forName(name, false, NativeImageMetadataTest.class.getClassLoader());
        };
    }

    static String descriptor(Class<?> c) {
        return c.describeConstable().orElseThrow().descriptorString();
    }

    // ---------------------------------------------------------------------------------------------------------
    // Class initialization

    /** Calls that must not run while the image is built: native addresses, threads, the build machine's CPUs. */
    static boolean runTimeOnly(InvokeInstruction i) {
        String owner = i.owner().asInternalName();
        String name = i.name().stringValue();
        return owner.startsWith("java/lang/foreign/Linker") || owner.equals("java/lang/foreign/SymbolLookup")
                || owner.equals("java/util/concurrent/Executors")
                || (owner.equals("java/lang/foreign/Arena") && !name.equals("close"))
                || (Set.of("java/util/concurrent/ForkJoinPool", "java/util/concurrent/ThreadPoolExecutor",
                        "java/util/concurrent/ScheduledThreadPoolExecutor", "java/lang/Thread", "java/util/Timer")
                        .contains(owner) && Set.of("<init>", "start").contains(name))
                || (owner.equals("java/lang/Runtime") && name.equals("availableProcessors"))
                || (owner.equals("java/lang/System") && name.startsWith("load"))
                || owner.startsWith("jcuda/");
    }

    static Set<String> runTimeInitialized() throws IOException {
        Properties p = new Properties();
        try (InputStream in = NativeImageMetadataTest.class.getClassLoader().getResourceAsStream("application.properties")) {
            p.load(in);
        }
        String args = p.getProperty("quarkus.native.additional-build-args", "");
        Set<String> out = new TreeSet<>();
        for (String a : args.split(",")) {
            if (a.strip().startsWith("--initialize-at-run-time=")) {
                out.add(a.strip().substring("--initialize-at-run-time=".length()));
            }
        }
        return out;
    }

    @Test
    void staticInitializersThatNeedTheRunningMachineRunAtStart() throws IOException {
        Set<String> runTime = runTimeInitialized();
        assertTrue(runTime.contains("jcuda"), "JCuda loads its natives in static initializers: " + runTime);
        for (String c : runTime) { // a renamed class would silently be initialized at build time again
            assertTrue(c.equals("jcuda") || exists(c), () -> "--initialize-at-run-time=" + c + ": no such class");
        }
        Map<String, String> offenders = new TreeMap<>();
        forEachAgentClass((name, cm) -> cm.methods().stream()
                .filter(m -> m.methodName().stringValue().equals("<clinit>"))
                .flatMap(m -> m.code().stream())
                .forEach(code -> code.forEach(e -> {
                    String cls = name.replace('/', '.');
                    if (e instanceof InvokeInstruction i && runTimeOnly(i) && !runTime.contains(cls)) {
                        offenders.putIfAbsent(cls, i.owner().asInternalName() + "." + i.name().stringValue());
                    }
                })));
        assertTrue(offenders.isEmpty(), () -> "static initializers that would run while the native image is built;"
                + " add them as --initialize-at-run-time to quarkus.native.additional-build-args: " + offenders);
    }

    static boolean exists(String c) {
        try {
            Class.forName(c, false, NativeImageMetadataTest.class.getClassLoader());
            return true;
        } catch (ClassNotFoundException e) {
            return false;
        }
    }

    // ---------------------------------------------------------------------------------------------------------

    /** Every class of the agent (target/classes) and of kvpool-api, which the agent's image also contains. */
    static void forEachAgentClass(BiConsumer<String, ClassModel> action) {
        for (Class<?> anchor : List.of(Libc.class, dev.kvpool.api.agent.AgentClient.class)) {
            Path root;
            try {
                root = Path.of(anchor.getProtectionDomain().getCodeSource().getLocation().toURI());
            } catch (URISyntaxException e) {
                throw new IllegalStateException(e);
            }
            int[] n = {0};
            try {
                if (Files.isDirectory(root)) {
                    try (Stream<Path> files = Files.walk(root)) {
                        for (Path f : files.filter(f -> f.toString().endsWith(".class")).toList()) {
                            ClassModel cm = ClassFile.of().parse(Files.readAllBytes(f));
                            action.accept(cm.thisClass().asInternalName(), cm);
                            n[0]++;
                        }
                    }
                } else {
                    try (ZipFile z = new ZipFile(root.toFile())) {
                        for (var e : z.stream().filter(e -> e.getName().endsWith(".class")
                                && !e.getName().startsWith("META-INF/")).toList()) {
                            try (InputStream in = z.getInputStream(e)) {
                                ClassModel cm = ClassFile.of().parse(in.readAllBytes());
                                action.accept(cm.thisClass().asInternalName(), cm);
                                n[0]++;
                            }
                        }
                    }
                }
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
            assertFalse(n[0] == 0, "no classes found under " + root);
        }
    }
}
