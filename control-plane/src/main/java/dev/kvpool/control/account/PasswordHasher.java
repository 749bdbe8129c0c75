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
        String[] p = stored == null ? new String[0] : stored.split("\\$");
        if (p.length != 4 || !p[0].equals("pbkdf2-sha256") || password == null) {
            return false;
        }
        byte[] expected = Base64.getDecoder().decode(p[3]);
        return MessageDigest.isEqual(expected, derive(password, Base64.getDecoder().decode(p[2]), Integer.parseInt(p[1])));
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
