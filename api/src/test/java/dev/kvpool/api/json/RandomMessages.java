package dev.kvpool.api.json;

import com.google.protobuf.ByteString;
import com.google.protobuf.Descriptors.Descriptor;
import com.google.protobuf.Descriptors.EnumDescriptor;
import com.google.protobuf.Descriptors.FieldDescriptor;
import com.google.protobuf.Descriptors.OneofDescriptor;
import com.google.protobuf.Message;
import java.util.HashSet;
import java.util.Random;
import java.util.Set;

/** Fills any message builder (generated or dynamic) with random values, including the awkward ones. */
final class RandomMessages {

    private static final String[] PIECES = {
        "a", "Z", "tp0", " ", "\"", "\\", "/", "<", ">", "&", "=", "'", "\u0000", "\u0001", "\u001f", "\u007f",
        "\b", "\t", "\n", "\f", "\r", "\u2028", "\u2029", "é", "中", "😀", "\u0080", "\uffff", "file://x?y=1&z=2"
    };
    private static final long[] LONGS = {0, 1, -1, Long.MIN_VALUE, Long.MAX_VALUE, (1L << 53) + 1,
        -8366447770138823354L, 4294967295L, 2147483648L};
    private static final double[] DOUBLES = {0.0, -0.0, Double.NaN, Double.POSITIVE_INFINITY,
        Double.NEGATIVE_INFINITY, Double.MIN_VALUE, Double.MAX_VALUE, 1e-7, 1e7, 0.1, 123.456, 1e20, -2.5};

    private final Random rnd;
    private final int maxDepth;

    RandomMessages(long seed, int maxDepth) {
        this.rnd = new Random(seed);
        this.maxDepth = maxDepth;
    }

    Message.Builder fill(Message.Builder b, int depth) {
        Descriptor d = b.getDescriptorForType();
        Set<OneofDescriptor> oneofsDone = new HashSet<>();
        for (FieldDescriptor f : d.getFields()) {
            OneofDescriptor oneof = f.getRealContainingOneof();
            if (oneof != null) {
                // at most one member per oneof, chosen when the oneof is first met
                if (oneofsDone.add(oneof) && rnd.nextInt(3) != 0) {
                    setOne(b, oneof.getField(rnd.nextInt(oneof.getFieldCount())), depth);
                }
                continue;
            }
            if (f.isMapField()) {
                fillMap(b, f, depth);
            } else if (f.isRepeated()) {
                int n = rnd.nextInt(4) == 0 ? 0 : rnd.nextInt(4);
                for (int i = 0; i < n; i++) {
                    Object v = value(b, f, depth);
                    if (v != null) {
                        b.addRepeatedField(f, v);
                    }
                }
            } else if (rnd.nextInt(5) != 0) {
                setOne(b, f, depth);
            }
        }
        return b;
    }

    private void setOne(Message.Builder b, FieldDescriptor f, int depth) {
        Object v = value(b, f, depth);
        if (v != null) {
            b.setField(f, v);
        }
    }

    private void fillMap(Message.Builder b, FieldDescriptor f, int depth) {
        Descriptor entry = f.getMessageType();
        FieldDescriptor kf = entry.findFieldByNumber(1);
        FieldDescriptor vf = entry.findFieldByNumber(2);
        Set<Object> keys = new HashSet<>();
        int n = rnd.nextInt(4);
        for (int i = 0; i < n; i++) {
            Message.Builder eb = b.newBuilderForField(f);
            Object k = value(eb, kf, depth);
            if (!keys.add(k)) {
                continue; // distinct keys, so that a round trip compares equal
            }
            Object v = value(eb, vf, depth);
            eb.setField(kf, k);
            if (v != null) {
                eb.setField(vf, v);
            }
            b.addRepeatedField(f, eb.build());
        }
    }

    /** A random value for one element of f, or null to leave it out (too deep). */
    private Object value(Message.Builder owner, FieldDescriptor f, int depth) {
        return switch (f.getJavaType()) {
            case INT -> rnd.nextInt(3) == 0 ? (int) LONGS[rnd.nextInt(LONGS.length)] : rnd.nextInt();
            case LONG -> rnd.nextInt(3) == 0 ? LONGS[rnd.nextInt(LONGS.length)] : rnd.nextLong();
            case FLOAT -> (float) dbl();
            case DOUBLE -> dbl();
            case BOOLEAN -> rnd.nextBoolean();
            case STRING -> str();
            case BYTE_STRING -> {
                byte[] bytes = new byte[rnd.nextInt(7)];
                rnd.nextBytes(bytes);
                yield ByteString.copyFrom(bytes);
            }
            case ENUM -> {
                EnumDescriptor e = f.getEnumType();
                yield rnd.nextInt(6) == 0
                        ? e.findValueByNumberCreatingIfUnknown(1000 + rnd.nextInt(5)) // unknown: printed as a number
                        : e.getValues().get(rnd.nextInt(e.getValues().size()));
            }
            case MESSAGE -> {
                if (depth >= maxDepth) {
                    yield null;
                }
                yield fill(owner.newBuilderForField(f), depth + 1).build();
            }
        };
    }

    private double dbl() {
        return switch (rnd.nextInt(3)) {
            case 0 -> DOUBLES[rnd.nextInt(DOUBLES.length)];
            case 1 -> (rnd.nextDouble() - 0.5) * Math.pow(10, rnd.nextInt(40) - 20);
            default -> {
                double d = Double.longBitsToDouble(rnd.nextLong());
                yield Double.isNaN(d) ? 0.5 : d;
            }
        };
    }

    private String str() {
        int n = rnd.nextInt(5);
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < n; i++) {
            sb.append(PIECES[rnd.nextInt(PIECES.length)]);
        }
        return sb.toString();
    }
}
