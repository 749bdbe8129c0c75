package dev.kvpool.control.account;

import java.security.MessageDigest;
import java.security.SecureRandom;
import java.util.Base64;
import javax.crypto.SecretKeyFactory;
import javax.crypto.spec.PBEKeySpec;

/** Salted PBKDF2-HMAC-SHA256 (JDK built-in): {@code pbkdf2-sha256$<iterations>$<salt b64>$<hash b64>}. */
public final class PasswordHasher {
    static final int ITERATIONS = 120_000;
    private static final SecureRandom RANDOM = new SecureRandom();

    private PasswordHasher() {
    }

    public static String hash(String password) {
        byte[] salt = new byte[16];
        RANDOM.nextBytes(salt);
        return "pbkdf2-sha256$" + ITERATIONS + "$" + Base64.getEncoder().encodeToString(salt) + "$"
                + Base64.getEncoder().encodeToString(derive(password, salt, ITERATIONS));
    }

    public static boolean verify(String password, String stored) {
        if (password == null || !wellFormed(stored)) {
            return false; // a stored hash of another form (hand-edited, imported) never matches, and never throws
        }
        String[] p = stored.split("\\$");
        byte[] expected = Base64.getDecoder().decode(p[3]);
        return MessageDigest.isEqual(expected, derive(password, Base64.getDecoder().decode(p[2]), Integer.parseInt(p[1])));
    }

    /** Iterations a stored hash may name: a hash imported with 2^31 iterations would make each login take hours. */
    static final int MIN_ITERATIONS = 10_000, MAX_ITERATIONS = 1_000_000;

    /**
     * Whether {@code stored} is a hash {@link #verify} can check: {@code pbkdf2-sha256$<iterations>$<salt>$<hash>},
     * iterations within [{@value #MIN_ITERATIONS}, {@value #MAX_ITERATIONS}], a salt of 8 to 64 bytes and a 32-byte hash.
     */
    public static boolean wellFormed(String stored) {
        if (stored == null || stored.length() > 256) {
            return false;
        }
        String[] p = stored.split("\\$", -1);
        if (p.length != 4 || !p[0].equals("pbkdf2-sha256") || !p[1].matches("[0-9]{1,9}")) {
            return false;
        }
        int iterations = Integer.parseInt(p[1]);
        try {
            int salt = Base64.getDecoder().decode(p[2]).length;
            return iterations >= MIN_ITERATIONS && iterations <= MAX_ITERATIONS && salt >= 8 && salt <= 64
                    && Base64.getDecoder().decode(p[3]).length == 32;
        } catch (IllegalArgumentException e) {
            return false;
        }
    }

    private static byte[] derive(String password, byte[] salt, int iterations) {
        try {
            return SecretKeyFactory.getInstance("PBKDF2WithHmacSHA256")
                    .generateSecret(new PBEKeySpec(password.toCharArray(), salt, iterations, 256)).getEncoded();
        } catch (Exception e) {
            throw new IllegalStateException("PBKDF2WithHmacSHA256 unavailable", e);
        }
    }

    /** Null when strong enough, else what is wrong: at least 12 characters, 3 of 4 character classes, not the name. */
    public static String weakness(String name, String password) {
        if (password == null || password.length() < 12) {
            return "password must have at least 12 characters";
        }
        int classes = (password.chars().anyMatch(Character::isLowerCase) ? 1 : 0)
                + (password.chars().anyMatch(Character::isUpperCase) ? 1 : 0)
                + (password.chars().anyMatch(Character::isDigit) ? 1 : 0)
                + (password.chars().anyMatch(c -> !Character.isLetterOrDigit(c)) ? 1 : 0);
        if (classes < 3) {
            return "password must mix at least 3 of: lower case, upper case, digits, other characters";
        }
        if (name != null && password.toLowerCase().contains(name.toLowerCase())) {
            return "password must not contain the account name";
        }
        return null;
    }
}
