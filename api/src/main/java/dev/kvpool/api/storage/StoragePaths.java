package dev.kvpool.api.storage;

import dev.kvpool.api.naming.Identifiers;
import dev.kvpool.api.naming.Text;
import java.nio.file.Path;

/**
 * The one place where a storage path is built from names a client chose. Every path of an instance's files is
 * {@code <root>/<instance id>/<spec name>[/<file>]}: each part is checked first ({@link Identifiers}: no separator,
 * never {@code .} or {@code ..}), then the result is resolved, normalised and proven to lie inside the storage's
 * root and inside the instance's own directory. A name that would leave either is refused, never repaired. The
 * metadata plane (which deletes files) and the data agent (which reads and writes them) both go through here.
 */
public final class StoragePaths {
    private StoragePaths() {
    }

    /** A path that would leave its storage root or its instance's directory, or a part that breaks the rules. */
    public static final class EscapeException extends IllegalArgumentException {
        public EscapeException(String message) {
            super(message);
        }
    }

    /** {@code root/instance}: the directory only that instance's files live in. */
    public static Path instanceDir(Path root, String instanceId) {
        Path r = checkedRoot(root);
        Identifiers.require(Identifiers.Kind.INSTANCE, "instance_id", instanceId);
        return prove(r, r, r.resolve(instanceId));
    }

    /** {@code root/instance/spec}. */
    public static Path specDir(Path root, String instanceId, String spec) {
        Path inst = instanceDir(root, instanceId);
        Identifiers.require(Identifiers.Kind.SPEC, "location spec name", spec);
        return prove(checkedRoot(root), inst, inst.resolve(spec));
    }

    /** {@code root/instance/spec/file}; {@code file} is one plain name (a slab file, its checksum records). */
    public static Path file(Path root, String instanceId, String spec, String file) {
        Path dir = specDir(root, instanceId, spec);
        Identifiers.require(Identifiers.Kind.SPEC, "file name", file); // same rule: one plain segment
        return prove(checkedRoot(root), instanceDir(root, instanceId), dir.resolve(file));
    }

    /**
     * A path a client or a peer named in full (a {@code file://} location's path): accepted only when it is
     * {@code root/<instance>/<spec>/<file>} with every part valid, and {@code <instance>} is {@code instanceId}
     * when that is not null. The agents use this for the locations the metadata plane hands out.
     */
    public static Path locate(Path root, String path, String instanceId) {
        Path r = checkedRoot(root);
        if (path == null || path.isEmpty() || path.indexOf('\0') >= 0) {
            throw new EscapeException("location path is empty or holds a NUL character");
        }
        Path p;
        try {
            p = Path.of(path);
        } catch (java.nio.file.InvalidPathException e) {
            throw new EscapeException("location path '" + Text.safe(path) + "' is not a valid path");
        }
        if (!p.isAbsolute() || !p.startsWith(r)) {
            throw new EscapeException("location path '" + Text.safe(path) + "' is not under the storage root " + r);
        }
        Path rel = r.relativize(p);
        if (rel.getNameCount() != 3) {
            throw new EscapeException("location path '" + Text.safe(path)
                    + "' is not <root>/<instance>/<spec>/<file> under " + r);
        }
        String inst = rel.getName(0).toString(), spec = rel.getName(1).toString(), file = rel.getName(2).toString();
        if (instanceId != null && !instanceId.equals(inst)) {
            throw new EscapeException("location path '" + Text.safe(path) + "' belongs to instance '"
                    + Text.safe(inst) + "', not '" + instanceId + "'");
        }
        try {
            return file(r, inst, spec, file);
        } catch (Identifiers.InvalidIdentifierException e) {
            throw new EscapeException("location path '" + Text.safe(path) + "': " + e.getMessage());
        }
    }

    private static Path checkedRoot(Path root) {
        if (root == null || !root.isAbsolute()) {
            throw new IllegalArgumentException("storage root must be an absolute path, got " + root);
        }
        return root.normalize();
    }

    /** The proof: after normalisation the path still starts with the root and with the owner's directory. */
    private static Path prove(Path root, Path owner, Path candidate) {
        Path n = candidate.normalize();
        if (!n.startsWith(root) || !n.startsWith(owner)) {
            throw new EscapeException("path " + Text.safe(n.toString()) + " would leave " + owner);
        }
        return n;
    }
}
