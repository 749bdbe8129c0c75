package dev.kvpool.meta.engine.report;

import java.security.SecureRandom;
import java.util.HexFormat;

/** Reporter generations (§4.5): random, unordered 128-bit tokens as 32 lower-case hex characters. */
final class Generations {
    private static final SecureRandom RANDOM = new SecureRandom();

    private Generations() {
    }

    static String next() {
        byte[] b = new byte[16];
        RANDOM.nextBytes(b);
        return HexFormat.of().formatHex(b);
    }

    static boolean valid(String s) {
        if (s.length() != 32) {
            return false;
        }
        for (int i = 0; i < 32; i++) {
            if (Character.digit(s.charAt(i), 16) < 0) {
                return false;
            }
        }
        return true;
    }
}
