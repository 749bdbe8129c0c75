package dev.kvpool.agent.io.gds;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import org.junit.jupiter.api.Test;

/**
 * The binding against the real libcufile, with or without a GPU: loads, binds every symbol, reads the version and
 * opens the driver (which, without a CUDA driver, must come back as a named cuFile error split out of the returned
 * struct, not a crash). Runs where the library is found ({@code kvpool.agent.gds.library}, or the loader's search:
 * on the build machines e.g. {@code -Dkvpool.agent.gds.library=.gpu/native/libcufile.so.0} after bench/gpu/pack.sh);
 * skipped elsewhere.
 */
class CuFileLibraryTest {
    @Test
    void realLibraryBindsAndAnswersInNamedCodes() {
        CuFile cu;
        try {
            cu = CuFile.load(CuFile.configuredLibrary());
        } catch (CuFile.Unavailable e) {
            assumeTrue(false, "libcufile not found here (" + e.getMessage() + "): skipped");
            return;
        }
        int v = cu.version();
        assertTrue(v >= 1070 && v < 10000, "cuFileGetVersion " + v + " (1.7 or later expected)");
        try {
            cu.driverOpen();
            System.out.println("[CuFileLibraryTest] cuFile " + v + ": driver open");
        } catch (CuFile.CuFileException e) { // no CUDA driver here: a named code, the struct split right
            assertFalse(e.status.toString().startsWith("CUfileOpError"), e.getMessage());
            assertTrue(e.status.err() > 5000 && e.status.err() < 5100, e.getMessage());
            System.out.println("[CuFileLibraryTest] cuFile " + v + ": " + e.getMessage());
        }
    }
}
