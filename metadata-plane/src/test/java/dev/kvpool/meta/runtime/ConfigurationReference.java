package dev.kvpool.meta.runtime;

import com.sun.source.tree.ClassTree;
import com.sun.source.tree.CompilationUnitTree;
import com.sun.source.tree.MethodTree;
import com.sun.source.tree.VariableTree;
import com.sun.source.util.JavacTask;
import com.sun.source.util.TreePathScanner;
import com.sun.source.util.Trees;
import io.smallrye.config.ConfigMapping;
import io.smallrye.config.ConfigMappings;
import io.smallrye.config.ConfigMappingInterface.Property;
import java.io.IOException;
import java.lang.reflect.Method;
import java.lang.reflect.ParameterizedType;
import java.lang.reflect.Type;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import javax.tools.JavaCompiler;
import javax.tools.ToolProvider;

/**
 * Writes docs/configuration.md from the metadata plane's {@code @ConfigMapping} interfaces: names and defaults as
 * SmallRye Config maps them ({@link ConfigMappings#getProperties}), descriptions from their Javadoc (read with the
 * JDK's own parser, so no doc tool or annotation processor is needed), aliases and environment variables from
 * application.properties. ConfigurationReferenceTest fails when the file is not what this writes.
 */
final class ConfigurationReference {
    /** A setting as the reference lists it. */
    record Setting(String name, String type, String defaultValue, String description, List<String> alsoFrom,
            List<String> feeds) {
    }

    /** The settings of one group interface, in declaration order. */
    record Section(String title, String intro, List<Setting> settings) {
    }

    private final List<Path> sources;
    private final Map<String, String> docs = new HashMap<>();
    private final Map<String, String> properties;

    /** {@code sources}: the source roots of the modules whose settings interfaces are documented. */
    ConfigurationReference(List<Path> sources, Map<String, String> applicationProperties) {
        this.sources = sources;
        this.properties = applicationProperties;
    }

    /**
     * The @ConfigMapping interfaces under the package root, found in compiled classes: a directory (this module, or
     * a sibling module's target/classes in a reactor build) or a jar (a sibling module from the local repository).
     */
    static List<Class<?>> mappings(Path classes, String packageRoot) throws IOException {
        if (Files.isRegularFile(classes)) {
            try (var jar = java.nio.file.FileSystems.newFileSystem(classes)) {
                return mappingsUnder(jar.getPath("/"), packageRoot);
            }
        }
        return mappingsUnder(classes, packageRoot);
    }

    private static List<Class<?>> mappingsUnder(Path classes, String packageRoot) throws IOException {
        List<Class<?>> out = new ArrayList<>();
        Path root = classes.resolve(packageRoot.replace('.', '/'));
        if (!Files.isDirectory(root)) {
            return out;
        }
        try (Stream<Path> files = Files.walk(root)) {
            for (Path f : (Iterable<Path>) files.filter(p -> p.toString().endsWith(".class")).sorted()::iterator) {
                String name = classes.relativize(f).toString().replace('/', '.').replaceAll("\\.class$", "");
                try {
                    Class<?> c = Class.forName(name, false, ConfigurationReference.class.getClassLoader());
                    if (c.isAnnotationPresent(ConfigMapping.class)) {
                        out.add(c);
                    }
                } catch (ClassNotFoundException | LinkageError e) {
                    // a class that does not load is no settings interface
                }
            }
        }
        return out;
    }

    List<Section> sections(List<Class<?>> mappings) throws IOException {
        Set<Class<?>> declaring = new LinkedHashSet<>();
        Map<String, Property> all = new LinkedHashMap<>();
        for (Class<?> m : mappings) {
            String prefix = m.getAnnotation(ConfigMapping.class).prefix();
            var props = ConfigMappings.getProperties(ConfigMappings.ConfigClass.configClass(m, prefix));
            for (var e : props.entrySet()) {
                if (e.getValue().isGroup() || e.getValue().isDefaultMethod()) {
                    continue;
                }
                all.put(e.getKey(), e.getValue());
                declaring.add(e.getValue().getMethod().getDeclaringClass());
                enumOf(e.getValue().getMethod().getGenericReturnType()).ifPresent(declaring::add);
            }
        }
        readDocs(declaring);
        // one section per interface, in the order of its first setting's name
        Map<Class<?>, List<Map.Entry<String, Property>>> byOwner = new LinkedHashMap<>();
        all.entrySet().stream().sorted(Map.Entry.comparingByKey())
                .forEach(e -> byOwner.computeIfAbsent(e.getValue().getMethod().getDeclaringClass(),
                        k -> new ArrayList<>()).add(e));
        List<Section> out = new ArrayList<>();
        for (var owner : byOwner.entrySet()) {
            List<Setting> settings = new ArrayList<>();
            String common = null;
            for (var e : owner.getValue()) {
                settings.add(setting(e.getKey(), e.getValue()));
                common = common == null ? e.getKey() : commonPrefix(common, e.getKey());
            }
            String title = common.replaceAll("\\.[^.]*$", "").replaceAll("[.\\[]$", "");
            out.add(new Section(title.isEmpty() ? owner.getKey().getSimpleName() : title + ".*",
                    doc(owner.getKey().getName()), settings));
        }
        out.sort(java.util.Comparator.comparing(Section::title));
        return out;
    }

    private Setting setting(String name, Property p) {
        Method m = p.getMethod();
        Type t = m.getGenericReturnType();
        String def = p.hasDefaultValue() ? p.getDefaultValue() : optional(t) ? "unset" : "required";
        String description = doc(m.getDeclaringClass().getName() + "#" + m.getName());
        var en = enumOf(t);
        if (en.isPresent()) {
            StringBuilder b = new StringBuilder(description);
            for (Object c : en.get().getEnumConstants()) {
                String d = doc(en.get().getName() + "#" + ((Enum<?>) c).name());
                b.append(b.isEmpty() ? "" : " ").append('`').append(spelling((Enum<?>) c)).append("`: ").append(d);
            }
            description = b.toString();
        }
        List<String> also = new ArrayList<>();
        List<String> feeds = new ArrayList<>();
        String own = properties.get(name);
        if (own != null) {
            Matcher x = Pattern.compile("\\$\\{([^:}$]+)").matcher(own);
            while (x.find()) {
                also.add(x.group(1));
            }
        }
        for (var e : properties.entrySet()) {
            if (e.getValue().equals("${" + name + "}")) {
                feeds.add(e.getKey());
            }
        }
        return new Setting(name, type(t), def, description, also, feeds);
    }

    private static boolean optional(Type t) {
        Class<?> raw = raw(t);
        return raw == java.util.Optional.class || raw == java.util.OptionalInt.class
                || raw == java.util.OptionalLong.class || raw == java.util.OptionalDouble.class;
    }

    private static Class<?> raw(Type t) {
        return t instanceof ParameterizedType p ? (Class<?>) p.getRawType() : (Class<?>) t;
    }

    private static java.util.Optional<Class<?>> enumOf(Type t) {
        Type inner = t instanceof ParameterizedType p && p.getActualTypeArguments().length == 1
                ? p.getActualTypeArguments()[0] : t;
        return inner instanceof Class<?> c && c.isEnum() ? java.util.Optional.of(c) : java.util.Optional.empty();
    }

    /** How a value of this type is written. */
    static String type(Type t) {
        if (t instanceof ParameterizedType p) {
            Class<?> raw = (Class<?>) p.getRawType();
            String inner = type(p.getActualTypeArguments()[0]);
            return raw == java.util.Optional.class ? inner : raw == List.class ? "list of " + inner : raw.getSimpleName();
        }
        Class<?> c = (Class<?>) t;
        if (c == java.util.OptionalInt.class || c == Integer.class) {
            return "int";
        } else if (c == java.util.OptionalLong.class || c == Long.class) {
            return "long";
        } else if (c == String.class) {
            return "string";
        } else if (c == java.time.Duration.class) {
            return "duration";
        } else if (c == io.quarkus.runtime.configuration.MemorySize.class) {
            return "size";
        } else if (c.isEnum()) {
            return String.join(" \\| ", Stream.of(c.getEnumConstants()).map(e -> spelling((Enum<?>) e)).toList());
        }
        return c.getSimpleName();
    }

    /** How users write an enum constant (SmallRye Config also takes other cases). */
    static String spelling(Enum<?> e) {
        return e.name().toLowerCase(Locale.ROOT).replace('_', '-');
    }

    private static String commonPrefix(String a, String b) {
        int i = 0;
        while (i < a.length() && i < b.length() && a.charAt(i) == b.charAt(i)) {
            i++;
        }
        return a.substring(0, i);
    }

    private String doc(String key) {
        String d = docs.get(key);
        if (d == null) {
            return "";
        }
        d = d.replaceAll("\\{@(?:link|linkplain) #?([^}\\s]+)(?: [^}]*)?}", "`$1`")
                .replaceAll("\\{@code ([^}]*)}", "`$1`").replaceAll("<p>", "").replaceAll("\\s+", " ").trim();
        return d.replace("|", "\\|");
    }

    /** Javadoc of every method, enum constant and type of these classes, keyed by binary name (and #member). */
    private void readDocs(Set<Class<?>> classes) throws IOException {
        Set<Path> files = new LinkedHashSet<>();
        for (Class<?> c : classes) {
            Class<?> top = c;
            while (top.getEnclosingClass() != null) {
                top = top.getEnclosingClass();
            }
            for (Path root : sources) {
                Path f = root.resolve(top.getName().replace('.', '/') + ".java");
                if (Files.exists(f)) {
                    files.add(f);
                    break;
                }
            }
        }
        JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
        try (var fm = javac.getStandardFileManager(null, null, StandardCharsets.UTF_8)) {
            var task = (JavacTask) javac.getTask(null, fm, d -> { }, List.of("-proc:none"), null,
                    fm.getJavaFileObjectsFromPaths(files));
            Trees trees = Trees.instance(task);
            for (CompilationUnitTree unit : task.parse()) {
                String pkg = unit.getPackageName() == null ? "" : unit.getPackageName().toString() + ".";
                new TreePathScanner<Void, String>() {
                    @Override
                    public Void visitClass(ClassTree c, String outer) {
                        String name = outer == null ? pkg + c.getSimpleName() : outer + "$" + c.getSimpleName();
                        put(name);
                        return super.visitClass(c, name);
                    }

                    @Override
                    public Void visitMethod(MethodTree m, String owner) {
                        put(owner + "#" + m.getName());
                        return null;
                    }

                    @Override
                    public Void visitVariable(VariableTree v, String owner) {
                        put(owner + "#" + v.getName());
                        return null;
                    }

                    private void put(String key) {
                        String d = trees.getDocComment(getCurrentPath());
                        if (d != null) {
                            docs.put(key, d);
                        }
                    }
                }.scan(unit, null);
            }
        }
    }

    /** The plain {@code key=value} lines of a properties file (no profiles), in order. */
    static Map<String, String> plainProperties(Path file) throws IOException {
        var p = new java.util.Properties();
        try (var r = Files.newBufferedReader(file)) {
            p.load(r);
        }
        Map<String, String> out = new TreeMap<>();
        for (String k : p.stringPropertyNames()) {
            if (!k.startsWith("%")) {
                out.put(k, p.getProperty(k));
            }
        }
        return out;
    }

    static String markdown(List<Section> sections, String regenerate) {
        StringBuilder b = new StringBuilder();
        b.append("# Metadata plane configuration\n\n");
        b.append("<!-- Generated from the metadata plane's @ConfigMapping interfaces and their Javadoc; do not edit.\n")
                .append("     Change the Javadoc, then: ").append(regenerate).append(" -->\n\n");
        b.append("Settings are Quarkus properties: `-Dkey=value`, an environment variable (Quarkus' rule: upper case, ")
                .append("every character that is not a letter or digit becomes `_`, e.g. `KVPOOL_META_STORE` for ")
                .append("`kvpool.meta.store`), or `application.properties`. \"Also\" names the KVCM keys and ")
                .append("environment variables the metadata plane's own application.properties reads for a ")
                .append("setting, \"feeds\" the Quarkus properties it sets from it. Durations are written `5s`, ")
                .append("`100ms`, `15m`, `24h` (or ISO-8601); sizes `64M`. The metadata plane refuses to start on ")
                .append("an unknown `kvpool.*` key or a value it cannot convert.\n\n");
        b.append("Contents:");
        for (Section s : sections) {
            b.append(" [`").append(s.title()).append("`](#").append(anchor(s.title())).append(')')
                    .append(s == sections.getLast() ? "\n\n" : ",");
        }
        for (Section s : sections) {
            b.append("## ").append(s.title()).append("\n\n");
            if (!s.intro().isEmpty()) {
                b.append(s.intro()).append("\n\n");
            }
            b.append("| property | type | default | meaning |\n|---|---|---|---|\n");
            for (Setting x : s.settings()) {
                String more = (x.alsoFrom().isEmpty() ? "" : " Also: " + code(x.alsoFrom()) + ".")
                        + (x.feeds().isEmpty() ? "" : " Feeds " + code(x.feeds()) + ".");
                b.append("| `").append(x.name()).append("` | ").append(x.type()).append(" | ")
                        .append(x.defaultValue().equals("unset") || x.defaultValue().equals("required")
                                ? x.defaultValue() : "`" + x.defaultValue() + "`").append(" | ")
                        .append((x.description() + more).trim()).append(" |\n");
            }
            b.append('\n');
        }
        return b.toString();
    }

    private static String code(List<String> names) {
        return String.join(", ", names.stream().map(n -> "`" + n + "`").toList());
    }

    /** GitHub's heading anchors: lower case, punctuation but - and _ dropped, spaces to -. */
    static String anchor(String title) {
        return title.toLowerCase(Locale.ROOT).replaceAll("[^a-z0-9 _-]", "").replace(' ', '-');
    }
}
